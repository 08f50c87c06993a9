// Plans inside the computations the entry calls in sequence: while bodies and
// conditions, conditional branches and calls.
//
// A callee counts at its call site with its own peak (memory_tracker.h), so a
// site over the budget by E bytes is relieved when the callee's peak drops by
// E: each callee is planned on its own schedule, aiming at its peak minus the
// largest excess among its call sites; then the computations it calls where
// it is still above that aim, and so on down (a loop in a loop body). Every
// callee is planned at most once.
#ifndef XLA_SERVICE_REMAT_CALLEE_PLANNING_H_
#define XLA_SERVICE_REMAT_CALLEE_PLANNING_H_

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

struct CalleePlanResult {
  int computations_planned = 0;
  // How deep the deepest planned callee is: 1 for one the entry calls.
  int deepest_level = 0;
  // Summed over the callees; decisions in the order planned.
  PlannerResult totals;
};

// `config.target_bytes` is the module's budget; 0 plans nothing.
absl::StatusOr<CalleePlanResult> PlanCalledComputations(
    HloModule* module, const PlannerConfig& config,
    const SizeFunction& size_fn);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_CALLEE_PLANNING_H_
