#include "xla/service/remat/callee_planning.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

absl::StatusOr<CalleePlanResult> PlanCalledComputations(
    HloModule* module, const PlannerConfig& config,
    const SizeFunction& size_fn) {
  CalleePlanResult out;
  if (config.target_bytes <= 0 || !module->has_schedule()) return out;
  TF_ASSIGN_OR_RETURN(auto peaks, CalledComputationPeaks(*module, size_fn));
  HloComputation* entry = module->entry_computation();
  TF_ASSIGN_OR_RETURN(
      ComputationMemory memory,
      ComputationMemory::Build(entry,
                               module->schedule().sequence(entry).instructions(),
                               /*is_entry=*/true, size_fn, peaks));
  // The most each callee must shed: the largest excess over the budget at
  // a site where it runs, no more than what it holds there.
  std::vector<HloComputation*> order;
  absl::flat_hash_map<HloComputation*, int64_t> excess;
  for (int pos = 0; pos < static_cast<int>(memory.sequence().size()); ++pos) {
    const int64_t over = memory.profile()[pos] - config.target_bytes;
    if (over <= 0 || memory.called_bytes()[pos] <= 0) continue;
    for (const HloComputation* callee :
         SequentialCallees(memory.sequence()[pos])) {
      auto peak = peaks.find(callee);
      if (peak == peaks.end() || peak->second <= 0) continue;
      HloComputation* mutable_callee = const_cast<HloComputation*>(callee);
      auto [it, fresh] = excess.try_emplace(mutable_callee, 0);
      if (fresh) order.push_back(mutable_callee);
      it->second = std::max(it->second, std::min(over, peak->second));
    }
  }
  for (HloComputation* callee : order) {
    PlannerConfig callee_config = config;
    // What remains of its peak; 0 asks the planner for as low as it can go.
    callee_config.target_bytes =
        std::max<int64_t>(0, peaks[callee] - excess[callee]);
    // The module's costs were gathered on the entry: count this callee's.
    auto costs = std::make_unique<RematCostAnalysis>(size_fn);
    TF_RETURN_IF_ERROR(callee->Accept(costs.get()));
    TF_ASSIGN_OR_RETURN(PlannerResult result,
                        RunRematPlanner(module, callee, callee_config, size_fn,
                                        *costs));
    if (result.instructions_added == 0 && result.instructions_removed == 0) {
      continue;
    }
    ++out.computations_planned;
    out.totals.AddMovesOf(std::move(result));
  }
  return out;
}

}  // namespace remat
}  // namespace xla
