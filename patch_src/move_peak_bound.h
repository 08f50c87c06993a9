// A lower bound on the peak a recomputation would leave, from the liveness
// model alone, before any of its HLO is built.
//
// Most moves a sweep tries on a deep graph raise the peak somewhere else and
// are taken back at once (60% on DenseNet-121's CPU step), after their
// clones were built and their uses redirected. Where the operands the
// clones read would be held across a point that already stands near the
// peak, the bound shows it without building anything.
#ifndef XLA_SERVICE_REMAT_MOVE_PEAK_BOUND_H_
#define XLA_SERVICE_REMAT_MOVE_PEAK_BOUND_H_

#include <cstdint>

#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {

// True only if applying `candidate` (a recomputation) at the sweep's `slot`
// would leave the model's peak above `threshold`: somewhere before the
// clones' slot the operands they read, extended to it, add more than the
// moved values can free. False when unsure, and for moves it does not model
// (compressions; chains reading clones earlier moves placed).
//
// It assumes what ApplyMove does to the model: the clones' reads only extend
// buffers (to the clones' slot); only the moved values' buffers and, when a
// moved value dies, its producer's reads at its definition shrink; the
// chain's clones and their transient add memory at the clones' slot only.
bool MoveSurelyRaisesPeak(const PlannerState& state, const Candidate& candidate,
                          int slot, int64_t threshold);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_MOVE_PEAK_BOUND_H_
