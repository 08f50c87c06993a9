// Where the XLA compilers call the pass (in-tree build).
//
// Each hook reads the flags and does nothing when --xla_use_hlo_remat-
// erialization is off, so that compilation is then exactly what it was.
#ifndef XLA_SERVICE_REMAT_REMAT_HOOKS_H_
#define XLA_SERVICE_REMAT_REMAT_HOOKS_H_

#include "absl/status/status.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/pass/hlo_pass_pipeline.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// GPU: appended to the post-scheduling pipeline, after upstream's own
// rematerialization and before buffer assignment. `alias_info` is the
// compiler's GpuAliasInfo (not owned; outlives the pipeline).
void AddRematPassIfEnabled(HloPassPipeline& pipeline, SizeFunction size_fn,
                           const AliasInfo* alias_info);

// CPU: run on the scheduled module right before buffer assignment.
absl::Status RunRematIfEnabled(HloModule* module, const SizeFunction& size_fn);

// --xla_rematerialization_disable_cuda: skip the GPU passes that build
// multi-output fusions, whose tuple results cannot be recomputed one by one.
bool MultiOutputFusionDisabled();

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_HOOKS_H_
