// Computes the schedule the rematerialization works on.
#ifndef XLA_SERVICE_REMAT_REMAT_SCHEDULE_H_
#define XLA_SERVICE_REMAT_REMAT_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/remat/background_frees.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// The schedulers `default` tries, in the order tried (the first of equal
// peaks is kept); the others' schedules are the other schedules a frontier
// may span (other_schedules.h).
inline constexpr RematScheduler kMemorySchedulers[] = {
    RematScheduler::kList, RematScheduler::kDfs, RematScheduler::kPostorder};

// A schedule one of XLA's schedulers made of a module, and its peak by the
// HeapSimulator's module-wide minimum (as HeapSimulatorPeak counts it).
struct MadeSchedule {
  RematScheduler scheduler;
  HloSchedule schedule;
  int64_t heap_sim_peak_bytes = 0;
};

struct ScheduleChoice {
  std::string scheduler;  // the one kept: "list", "DFS" or "postorder"
  int64_t heap_sim_peak_bytes = 0;
  // Every schedule made, the kept one too, in the order they were made.
  std::vector<MadeSchedule> made;
};

// The schedule each of `schedulers` (list, DFS or postorder) makes of
// `module`, which keeps its own. `alias_info` says which values the target
// lets share a buffer (GPU: GpuAliasInfo); null means XLA's default
// AliasInfo. The analyses the schedulers share are freed in `frees` when
// given (0.09 s of DenseNet-121's CPU step), else before this returns.
absl::StatusOr<std::vector<MadeSchedule>> MakeSchedules(
    const HloModule& module, absl::Span<const RematScheduler> schedulers,
    const SizeFunction& size_fn, const AliasInfo* alias_info = nullptr,
    BackgroundFrees* frees = nullptr);

// Replaces the module's schedule with the one `kind` produces; for kDefault
// makes list, DFS and postorder's and keeps the lowest HeapSimulator peak
// (the first of equals). kGiven is the caller's to handle (it keeps the
// schedule). `alias_info` and `frees` as for MakeSchedules.
absl::StatusOr<ScheduleChoice> RescheduleModule(
    HloModule* module, RematScheduler kind, const SizeFunction& size_fn,
    const AliasInfo* alias_info = nullptr, BackgroundFrees* frees = nullptr);

// Peak of the module's current schedule, by XLA's HeapSimulator: the referee
// for every memory claim.
absl::StatusOr<int64_t> HeapSimulatorPeak(
    const HloModule& module, const SizeFunction& size_fn,
    const AliasInfo* alias_info = nullptr);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_SCHEDULE_H_
