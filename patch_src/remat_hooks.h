// Where the XLA compilers call the pass (in-tree build).
//
// Each hook reads the flags and does nothing when --xla_use_hlo_remat-
// erialization is off, so that compilation is then exactly what it was.
#ifndef XLA_SERVICE_REMAT_REMAT_HOOKS_H_
#define XLA_SERVICE_REMAT_REMAT_HOOKS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/pass/hlo_pass_pipeline.h"
#include "xla/service/hlo_module_config.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// The options as the GPU hook runs the pass: after copy insertion
// (OptionsAfterCopyInsertion), planned and judged by what BufferAssigner
// allocates with the GPU's 256-byte alignment. hlo-remat --platform gpu uses
// the same.
RematOptions GpuHookOptions(RematOptions options);

// GPU: appended to the post-scheduling pipeline, after upstream's own
// rematerialization and before buffer assignment. `alias_info` is the
// compiler's GpuAliasInfo (not owned; outlives the pipeline).
void AddRematPassIfEnabled(HloPassPipeline& pipeline, SizeFunction size_fn,
                           const AliasInfo* alias_info);

// CPU: run on the scheduled module right before buffer assignment.
absl::Status RunRematIfEnabled(HloModule* module, const SizeFunction& size_fn);

// The passes of the v2.21.0 GPU pipeline that build tuple-shaped fusions,
// whose results cannot be recomputed one by one: MultiOutputFusion
// (fusion_pipeline.cc) builds the loop/input multi-output fusions, and
// SoftmaxRewriterTriton (gpu_compiler.cc, Ampere and later) the multi-output
// Triton softmax fusions. Measured on a ResNet-20 step for h100_sxm
// (tests/test_gpu_pipeline.py); this XLA has no horizontal fusion passes.
const std::vector<std::string>& MultiOutputFusionPassNames();

// GPU, first thing in RunHloPasses: with --xla_rematerialization_disable_cuda
// those passes join the module's --xla_disable_hlo_passes, which every
// HloPassPipeline honours (the out-of-tree CLI disables them the same way).
void DisableMultiOutputFusionPasses(HloModuleConfig& config);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_HOOKS_H_
