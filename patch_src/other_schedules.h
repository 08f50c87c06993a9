// Frontiers on other schedules of the module (CPU, scheduler `default`).
//
// `default` keeps the schedule with the lowest peak before any plan, but a
// plan can end lower on another: the causal decoder in mixed bf16 stopped at
// 0.437 of its figure on the DFS scheduler's schedule and went to 0.375 on the
// list scheduler's (docs/measured.md). Where the kept schedule's lowest usable
// plan stays more than kOtherSchedulesAbove times the floor, the frontiers of
// the other schedules are searched too, each on a copy of the module, and
// their points join the lookup: the module's frontier spans schedules. The
// trigger and every point depend on the module alone, never on the budget,
// so the lookup's promises (plan_frontier.h) hold.
#ifndef XLA_SERVICE_REMAT_OTHER_SCHEDULES_H_
#define XLA_SERVICE_REMAT_OTHER_SCHEDULES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// Above this many times the floor, the kept schedule's lowest plan may be
// stopped by its schedule: the target is 1.5 times the floor, and
// below 1.25 the catalogue's other schedules went no lower.
inline constexpr double kOtherSchedulesAbove = 1.25;

// Whether the lowest usable point (else `start_bytes`, no plan) lies above
// kOtherSchedulesAbove times `floor_bytes` (0: no floor, never).
bool StopsFarAboveTheFloor(absl::Span<const FrontierPoint> points,
                           int64_t start_bytes, int64_t floor_bytes,
                           const FrontierRules& rules);

// A schedule by names: each scheduled computation's instructions in order,
// which carries over between a module and its copies (Clone keeps names).
struct NamedSchedule {
  std::string scheduler;  // what made it, for the report
  absl::flat_hash_map<std::string, std::vector<std::string>> sequences;
};

// `schedule` (of `module`) by names.
NamedSchedule NameSchedule(const HloModule& module, const HloSchedule& schedule,
                           std::string scheduler);

// Gives `module` the schedule `named`. A computation `named` lacks keeps
// its order, one the module lacks is passed over (a computation nothing
// calls is not copied); an instruction that does not match is an error
// that names it.
absl::Status ApplyNamedSchedule(const NamedSchedule& named, HloModule* module);

// A schedule of the module whose frontier is searched, named before any
// plan was made: XLA's list scheduler breaks ties by the order of each
// instruction's users, which a plan made and taken back changes, so run on
// the module after the kept schedule's search it made another schedule with
// each number of lanes (the causal decoder in bf16, CPU).
struct ScheduleToSearch {
  NamedSchedule order;
  // Its HeapSimulator peak where its scheduler measured it; else measured
  // on the copy.
  std::optional<int64_t> heap_sim_peak_bytes;
};

// What the other schedules' searches share with the kept one's.
struct OtherSchedulesOptions {
  // The schedules besides the kept one, in the order searched.
  std::vector<ScheduleToSearch> schedules;
  // The kept schedule's planner config, its frontier search included (its
  // aims, choice and other_schedules are replaced on each copy).
  PlannerConfig config;
  // What the aims are shares of (FrontierAims), and the floor.
  int64_t reference_bytes = 0;
  int64_t floor_bytes = 0;
  const AliasInfo* alias_info = nullptr;
};

// Searches the frontiers of the other schedules and remembers each one's
// schedule and aims, so that a point chosen on it can be made on the module.
class OtherSchedules {
 public:
  OtherSchedules(OtherSchedulesOptions options, const SizeFunction& size_fn)
      : options_(std::move(options)), size_fn_(size_fn) {}

  // One frontier per other schedule, in order (FrontierPoint::schedule k is
  // the k-th), each searched on a copy of `module`, which holds no plan.
  absl::StatusOr<std::vector<std::shared_ptr<const KnownFrontier>>> Search(
      const HloModule& module);

  // Of the k-th other schedule (k >= 1): its order, and the aims its search
  // was given.
  const NamedSchedule& schedule(int k) const { return searched_[k - 1].order; }
  const std::vector<int64_t>& aims(int k) const {
    return searched_[k - 1].aims;
  }
  // What the searches counted, for the report.
  int plans_tried() const { return plans_tried_; }
  int judgements() const { return judgements_; }
  double judge_seconds() const { return judge_seconds_; }

 private:
  struct Searched {
    NamedSchedule order;
    std::vector<int64_t> aims;
  };
  absl::StatusOr<std::shared_ptr<const KnownFrontier>> SearchOne(
      const HloModule& module, const ScheduleToSearch& schedule);

  OtherSchedulesOptions options_;
  const SizeFunction& size_fn_;
  std::vector<Searched> searched_;
  int plans_tried_ = 0;
  int judgements_ = 0;
  double judge_seconds_ = 0;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_OTHER_SCHEDULES_H_
