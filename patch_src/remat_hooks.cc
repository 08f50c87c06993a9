#include "xla/service/remat/remat_hooks.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "xla/service/gpu/gpu_constants.h"
#include "xla/service/remat/remat_flags.h"
#include "xla/service/remat/remat_pass.h"
#include "xla/tsl/platform/errors.h"

namespace xla {
namespace remat {

RematOptions GpuHookOptions(RematOptions options) {
  options = OptionsAfterCopyInsertion(std::move(options));
  options.memory_figure = {MemoryFigure::kBufferAssignment,
                           gpu::kXlaAllocatedBufferAlignBytes};
  return options;
}

void AddRematPassIfEnabled(HloPassPipeline& pipeline, SizeFunction size_fn,
                           const AliasInfo* alias_info) {
  RematOptions options = CurrentRematOptions();
  if (!options.enabled) return;
  options = GpuHookOptions(std::move(options));
  pipeline.AddPass<RematerializationPass>(std::move(options),
                                          std::move(size_fn), alias_info);
}

absl::Status RunRematIfEnabled(HloModule* module, const SizeFunction& size_fn) {
  RematOptions options = CurrentRematOptions();
  if (!options.enabled) return absl::OkStatus();
  RematerializationPass pass(std::move(options), size_fn);
  return pass.Run(module, /*execution_threads=*/{}).status();
}

const std::vector<std::string>& MultiOutputFusionPassNames() {
  static const auto* names = new std::vector<std::string>{
      "multi_output_fusion",
      "triton-softmax-rewriter",
  };
  return *names;
}

void DisableMultiOutputFusionPasses(HloModuleConfig& config) {
  const RematOptions options = CurrentRematOptions();
  if (!options.enabled || !options.disable_cuda_fusions) return;
  DebugOptions& debug_options = config.mutable_debug_options();
  for (const std::string& name : MultiOutputFusionPassNames()) {
    if (!absl::c_linear_search(debug_options.xla_disable_hlo_passes(), name)) {
      debug_options.add_xla_disable_hlo_passes(name);
    }
  }
}

}  // namespace remat
}  // namespace xla
