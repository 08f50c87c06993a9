#include "xla/service/remat/other_schedules.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/remat/background_frees.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_planner.h"
#include "xla/service/remat/remat_schedule.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

bool StopsFarAboveTheFloor(absl::Span<const FrontierPoint> points,
                           int64_t start_bytes, int64_t floor_bytes,
                           const FrontierRules& rules) {
  if (floor_bytes <= 0) return false;
  const std::vector<int> usable = UsablePoints(points, start_bytes, rules);
  const int64_t lowest =
      usable.empty() ? start_bytes : points[usable.back()].peak_bytes;
  return static_cast<double>(lowest) >
         kOtherSchedulesAbove * static_cast<double>(floor_bytes);
}

NamedSchedule NameSchedule(const HloModule& module, const HloSchedule& schedule,
                           std::string scheduler) {
  NamedSchedule named;
  named.scheduler = std::move(scheduler);
  for (const HloComputation* computation : module.computations()) {
    if (!schedule.is_computation_scheduled(computation)) continue;
    std::vector<std::string>& names = named.sequences[computation->name()];
    for (const HloInstruction* instruction :
         schedule.sequence(computation).instructions()) {
      names.emplace_back(instruction->name());
    }
  }
  return named;
}

absl::Status ApplyNamedSchedule(const NamedSchedule& named, HloModule* module) {
  // A computation nothing calls is not copied (Clone), so either side may
  // have one the other lacks: the module's keeps the order it has.
  HloSchedule schedule =
      module->has_schedule() ? module->schedule() : HloSchedule(module);
  for (const auto& [computation_name, names] : named.sequences) {
    HloComputation* computation =
        module->GetComputationWithName(computation_name);
    if (computation == nullptr) continue;
    absl::flat_hash_map<absl::string_view, HloInstruction*> by_name;
    for (HloInstruction* instruction : computation->instructions()) {
      by_name[instruction->name()] = instruction;
    }
    HloInstructionSequence sequence;
    for (const std::string& name : names) {
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        return absl::InternalError(absl::StrCat(
            "rematerialization: the ", named.scheduler, " schedule names ",
            name, ", which ", computation_name, " lacks"));
      }
      sequence.push_back(it->second);
    }
    schedule.set_sequence(computation, std::move(sequence));
  }
  TF_RETURN_IF_ERROR(schedule.Verify());
  return module->set_schedule(std::move(schedule));
}

absl::StatusOr<std::vector<std::shared_ptr<const KnownFrontier>>>
OtherSchedules::Search(const HloModule& module) {
  std::vector<std::shared_ptr<const KnownFrontier>> frontiers;
  searched_.clear();
  for (const ScheduleToSearch& schedule : options_.schedules) {
    TF_ASSIGN_OR_RETURN(frontiers.emplace_back(), SearchOne(module, schedule));
  }
  return frontiers;
}

namespace {

// A copy of the module and the costs of its instructions, destroyed before
// the module they read.
struct ScheduledCopy {
  std::unique_ptr<HloModule> module;
  std::unique_ptr<RematCostAnalysis> costs;
};

}  // namespace

// `schedule`'s frontier, searched on a copy of `module` it orders.
absl::StatusOr<std::shared_ptr<const KnownFrontier>> OtherSchedules::SearchOne(
    const HloModule& module, const ScheduleToSearch& schedule) {
  const std::string& name = schedule.order.scheduler;
  ScheduledCopy copy;
  copy.module = module.Clone("");  // keeps every name
  TF_RETURN_IF_ERROR(ApplyNamedSchedule(schedule.order, copy.module.get()));
  int64_t start = 0;
  if (schedule.heap_sim_peak_bytes.has_value()) {
    start = *schedule.heap_sim_peak_bytes;
  } else {
    TF_ASSIGN_OR_RETURN(
        start, HeapSimulatorPeak(*copy.module, size_fn_, options_.alias_info));
  }
  Searched searched;
  searched.order = NameSchedule(*copy.module, copy.module->schedule(), name);
  searched.aims =
      FrontierAims(DefaultFrontierShares(), options_.reference_bytes, start,
                   options_.floor_bytes);
  TF_ASSIGN_OR_RETURN(copy.costs, AnalyzeCosts(*copy.module, size_fn_));
  PlannerConfig config = options_.config;
  // The planner builds the memory model of the copy's schedule.
  config.entry_memory = nullptr;
  FrontierSearch& search = *config.frontier;
  search.aims = searched.aims;
  search.start_peak_bytes = start;
  search.known = nullptr;
  search.other_schedules = nullptr;
  // Only the points: the copy is not planned.
  search.choose = [](absl::Span<const FrontierPoint>) -> std::optional<int> {
    return std::nullopt;
  };
  TF_ASSIGN_OR_RETURN(
      const PlannerResult result,
      RunRematPlanner(copy.module.get(), config, size_fn_, *copy.costs));
  plans_tried_ += result.plans_tried;
  judgements_ += result.judgements;
  judge_seconds_ += result.judge_seconds;
  if (search.frees != nullptr) {
    search.frees->Free(std::make_unique<ScheduledCopy>(std::move(copy)));
  }
  searched_.push_back(std::move(searched));
  if (result.frontier_made == nullptr) {
    return absl::InternalError(
        "rematerialization: another schedule's search kept no frontier");
  }
  return result.frontier_made;
}

}  // namespace remat
}  // namespace xla
