// Scoring of the planner's moves: whether a value can move at a position,
// what recomputing (alone or with a chain of its operands) or compressing it
// would free there and at what cost.
//
// Read-only over the planner's state (planner_values.h), so a score can be
// cached and reused until a move changes what it read (each scoring lists
// that in ScoreReads; score_dependencies.h) or the sweep crosses a position
// the score depended on (its horizon).
#ifndef XLA_SERVICE_REMAT_PLANNER_SCORING_H_
#define XLA_SERVICE_REMAT_PLANNER_SCORING_H_

#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {

// The version of `operand` a clone placed at `slot` should read: the one
// that lives longest among those defined before it. `operand` itself if it
// is that one (also where it is a bitcast of it), else the version's
// instruction, whose shape a bitcast operand's may differ from: a clone of
// the reader reads a bitcast of it (ReadOperand). An original whose every
// use moved to a clone is not read again through a bitcast of it. Adds what
// it compared to `reads` when given.
HloInstruction* ChooseOperand(const PlannerState& state,
                              HloInstruction* operand, int slot,
                              ScoreReads* reads = nullptr);

// Checks shared by every move of value `index` at the sweep's `slot`; sets
// the first later use.
// Every scoring function lowers `horizon` to the first slot after `slot` at
// which its answer could differ with no move applied in between (a use or
// the end of a buffer it compared with `slot` is crossed): the sweep reuses
// a score until then. Each adds what it read of the state to `reads`.
bool Movable(const PlannerState& state, int index, int slot, int& first_late,
             int& horizon, ScoreReads& reads);
bool EvaluateRecompute(const PlannerState& state, int index, int slot,
                       bool chains, Candidate& out, int& horizon,
                       ScoreReads& reads);
bool EvaluateCompress(const PlannerState& state, int index, int slot,
                      Candidate& out, int& horizon, ScoreReads& reads);

// Scores value `index` at `slot` into `cache` unless the cache still holds;
// true when it scored afresh (cache.reads is then what it read).
bool Score(const PlannerState& state, int index, int slot, ScoreCache& cache);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLANNER_SCORING_H_
