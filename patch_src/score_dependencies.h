// Which cached scores a move can change. A score reads a few buffers, values
// and version lists (ScoreReads); a move changes a few (its liveness log, the
// value it moved, its operands, the readers it redirected). Marking only the
// scores that read what a move changed keeps a sweep from re-scoring every
// live candidate after every move, which made planning quadratic in the
// depth of the network.
#ifndef XLA_SERVICE_REMAT_SCORE_DEPENDENCIES_H_
#define XLA_SERVICE_REMAT_SCORE_DEPENDENCIES_H_

#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {

// Value `index` was scored afresh: files its score under what it read.
void RegisterScoreReads(PlannerState& state, int index);

// `move` was applied and kept, or taken back: the scores that read anything
// it changed go stale. (A move taken back at once, before any scoring,
// changed nothing a score can see: no call needed.)
void MarkScoresStale(PlannerState& state, const AppliedMove& move);

// Every score goes stale.
void MarkAllScoresStale(PlannerState& state);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_SCORE_DEPENDENCIES_H_
