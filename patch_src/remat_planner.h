// The planner behind `standard`, `compress`, `standardcompress` and `path`.
//
// Sweeps the schedule of the entry computation (or a callee), once per plan
// tried (a missed budget retries a few targets). At each position whose live
// bytes exceed the target it picks, among the values live across that
// position, the move that frees the most bytes per unit of cost, until the
// position is within the target or no move frees memory there:
//   - recompute: clone the producer right before the value's first later use
//     and point the later uses at the clone (its operands live longer);
//   - chain (path): recompute the producers of those operands too, back to an
//     articulation point or a value that is live there anyway, so that no
//     operand is held across the position;
//   - compress: copy the value into a layout the target stores in fewer bytes
//     after its last early use, and back before its first later use.
// A move that would raise the planned peak is taken back at once, so the plan
// never has a higher peak than doing nothing. For `path`, the chains are
// afterwards undone, costliest per byte first, while the peak still holds.
// Each move costs O(uses + operands) to score and the profile is a segment
// tree: a pass is O(n log n + over-budget positions x live candidates).
#ifndef XLA_SERVICE_REMAT_REMAT_PLANNER_H_
#define XLA_SERVICE_REMAT_REMAT_PLANNER_H_

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// `costs` must have been run on the module before the call
// (cost_model.h: library calls counted).
absl::StatusOr<PlannerResult> RunRematPlanner(HloModule* module,
                                              const PlannerConfig& config,
                                              const SizeFunction& size_fn,
                                              const HloCostAnalysis& costs);

// The same on another scheduled computation (a while body, a conditional
// branch): its parameters are its caller's buffers, its root's outputs live
// to its end, and a while body's replaced state elements count as
// overwritten where their new values are defined. `costs` must cover it.
absl::StatusOr<PlannerResult> RunRematPlanner(HloModule* module,
                                              HloComputation* computation,
                                              const PlannerConfig& config,
                                              const SizeFunction& size_fn,
                                              const HloCostAnalysis& costs);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_PLANNER_H_
