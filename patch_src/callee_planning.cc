#include "xla/service/remat/callee_planning.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/remat_planner.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

// Plans the callees of `caller` that run where it is above `target`, then
// theirs, depth first; `depth` is the callees' (1 for the entry's). `planned`
// holds every computation planned so far.
absl::Status PlanCalleesOf(HloModule* module, HloComputation* caller,
                           int64_t target, int depth,
                           const PlannerConfig& config,
                           const SizeFunction& size_fn,
                           absl::flat_hash_set<const HloComputation*>& planned,
                           CalleePlanResult& out) {
  // Taken again at each level: the plans below change the peaks above.
  TF_ASSIGN_OR_RETURN(auto peaks, CalledComputationPeaks(*module, size_fn));
  TF_ASSIGN_OR_RETURN(
      ComputationMemory memory,
      ComputationMemory::Build(
          caller, module->schedule().sequence(caller).instructions(),
          /*is_entry=*/caller == module->entry_computation(), size_fn, peaks));
  // The most each callee must shed: the largest excess over the target at
  // a site where it runs, no more than what it holds there.
  std::vector<HloComputation*> order;
  absl::flat_hash_map<HloComputation*, int64_t> excess;
  for (int pos = 0; pos < static_cast<int>(memory.sequence().size()); ++pos) {
    const int64_t over = memory.profile()[pos] - target;
    if (over <= 0 || memory.called_bytes()[pos] <= 0) continue;
    for (const HloComputation* callee :
         SequentialCallees(memory.sequence()[pos])) {
      auto peak = peaks.find(callee);
      if (peak == peaks.end() || peak->second <= 0) continue;
      if (planned.contains(callee)) continue;
      HloComputation* mutable_callee = const_cast<HloComputation*>(callee);
      auto [it, fresh] = excess.try_emplace(mutable_callee, 0);
      if (fresh) order.push_back(mutable_callee);
      it->second = std::max(it->second, std::min(over, peak->second));
    }
  }
  for (HloComputation* callee : order) {
    if (!planned.insert(callee).second) continue;  // reached deeper first
    PlannerConfig callee_config = config;
    callee_config.keep_plan = nullptr;  // the simulator judges the entry only
    callee_config.entry_memory = nullptr;
    callee_config.floor_bytes = 0;  // the module's floor bounds the entry
    // What remains of its peak; 0 asks the planner for as low as it can go.
    callee_config.target_bytes =
        std::max<int64_t>(0, peaks[callee] - excess[callee]);
    // The module's costs were gathered on the entry: count this callee's.
    auto costs = std::make_unique<RematCostAnalysis>(size_fn);
    TF_RETURN_IF_ERROR(callee->Accept(costs.get()));
    TF_ASSIGN_OR_RETURN(
        PlannerResult result,
        RunRematPlanner(module, callee, callee_config, size_fn, *costs));
    if (result.instructions_added > 0 || result.instructions_removed > 0) {
      ++out.computations_planned;
      out.deepest_level = std::max(out.deepest_level, depth);
      out.totals.AddMovesOf(std::move(result));
    }
    // Loops and branches it runs in turn, where it is still over its aim.
    TF_RETURN_IF_ERROR(PlanCalleesOf(module, callee, callee_config.target_bytes,
                                     depth + 1, config, size_fn, planned, out));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CalleePlanResult> PlanCalledComputations(
    HloModule* module, const PlannerConfig& config,
    const SizeFunction& size_fn) {
  CalleePlanResult out;
  if (config.target_bytes <= 0 || !module->has_schedule()) return out;
  absl::flat_hash_set<const HloComputation*> planned;
  TF_RETURN_IF_ERROR(PlanCalleesOf(module, module->entry_computation(),
                                   config.target_bytes, /*depth=*/1, config,
                                   size_fn, planned, out));
  return out;
}

}  // namespace remat
}  // namespace xla
