// The pass's steps on one module, in order: check there is work, schedule,
// hoist last readers, measure the floor, plan (remat_planner.h) or run XLA's
// own pass, verify, measure and report. RematerializationPass
// (remat_pass.h) runs it inside the compilers; the hlo-remat CLI calls it
// directly to get the report.
#ifndef XLA_SERVICE_REMAT_REMAT_DRIVER_H_
#define XLA_SERVICE_REMAT_REMAT_DRIVER_H_

#include "absl/status/statusor.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_report.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// Runs the pass on `module` (scheduling it first) and reports what it did.
// With options.enabled false the module is left untouched. `alias_info` is
// the target's (GPU: GpuAliasInfo); null means XLA's default AliasInfo.
absl::StatusOr<RematReport> RunRemat(HloModule* module,
                                     const RematOptions& options,
                                     const SizeFunction& size_fn,
                                     const AliasInfo* alias_info = nullptr);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_DRIVER_H_
