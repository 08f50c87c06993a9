// The frontier search: every aim's plan made (by lanes, each a planner on
// its own copy of the module), the aims whose plans the platform's figure
// put well under them raised, plans made between neighbours far apart in
// FLOPs, and the plan the budget chooses made again and applied.
#ifndef XLA_SERVICE_REMAT_FRONTIER_POINTS_H_
#define XLA_SERVICE_REMAT_FRONTIER_POINTS_H_

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/planner.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// The frontier search (planner_types.h, FrontierSearch): every aim's plan
// is made (FrontierPoints) and judged; the chosen aim's search is made
// again, as deterministic as the search's own re-plans, and applied.
absl::StatusOr<PlannerResult> PlanFromFrontier(
    Planner& planner, const HloModule& module,
    const HloComputation& computation, const PlannerConfig& config,
    const SizeFunction& size_fn);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_FRONTIER_POINTS_H_
