// The planner's entry: the frontier search (frontier_points.h) where the
// config asks for it, else the search for one budget (plan_search.h).
#include "xla/service/remat/remat_planner.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/remat/frontier_points.h"
#include "xla/service/remat/plan_search.h"
#include "xla/service/remat/planner.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/size_function.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

absl::StatusOr<PlannerResult> RunRematPlanner(HloModule* module,
                                              const PlannerConfig& config,
                                              const SizeFunction& size_fn,
                                              const HloCostAnalysis& costs) {
  return RunRematPlanner(module, module->entry_computation(), config, size_fn,
                         costs);
}

absl::StatusOr<PlannerResult> RunRematPlanner(HloModule* module,
                                              HloComputation* computation,
                                              const PlannerConfig& config,
                                              const SizeFunction& size_fn,
                                              const HloCostAnalysis& costs) {
  if (!module->has_schedule() ||
      !module->schedule().is_computation_scheduled(computation)) {
    return absl::FailedPreconditionError(
        absl::StrCat("rematerialization planner needs a schedule for ",
                     computation->name()));
  }
  Planner planner(module, computation, config, size_fn, costs);
  TF_RETURN_IF_ERROR(planner.Init());
  if (config.frontier.has_value()) {
    if (config.keep_plan == nullptr) {
      return absl::InvalidArgumentError(
          "the frontier search needs a judge (keep_plan)");
    }
    return PlanFromFrontier(planner, *module, *computation, config, size_fn);
  }
  PlanSearch search(planner, config);
  TF_ASSIGN_OR_RETURN(const PlanOutcome best, SearchFor(search));
  if (!config.optimal.has_value() || search.solver_plan_kept()) {
    return search.KeepNeededMoves(best);
  }
  // `path`'s plan stands: made again by the same search, without the solver.
  PlannerConfig without_solver = config;
  without_solver.optimal.reset();
  TF_RETURN_IF_ERROR(planner.StartSearch(without_solver));
  PlanSearch again(planner, without_solver);
  TF_ASSIGN_OR_RETURN(const PlanOutcome remade, SearchFor(again));
  return again.KeepNeededMoves(remade);
}

}  // namespace remat
}  // namespace xla
