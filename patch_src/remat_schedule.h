// Computes the schedule the rematerialization works on.
#ifndef XLA_SERVICE_REMAT_REMAT_SCHEDULE_H_
#define XLA_SERVICE_REMAT_REMAT_SCHEDULE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/background_frees.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

struct ScheduleChoice {
  std::string scheduler;  // the one kept: "list", "DFS" or "postorder"
  int64_t heap_sim_peak_bytes = 0;
};

// Replaces the module's schedule with the one `kind` produces; for kDefault
// runs list, DFS and postorder and keeps the lowest HeapSimulator peak.
// kGiven is the caller's to handle (it keeps the schedule).
// `alias_info` says which values the target lets share a buffer (GPU:
// GpuAliasInfo); null means XLA's default AliasInfo. The analyses the
// schedulers share are freed in `frees` when given (0.09 s of DenseNet-121's
// CPU step), else before this returns.
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
