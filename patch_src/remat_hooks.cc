#include "xla/service/remat/remat_hooks.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "xla/service/remat/remat_flags.h"
#include "xla/service/remat/remat_pass.h"
#include "xla/tsl/platform/errors.h"

namespace xla {
namespace remat {

void AddRematPassIfEnabled(HloPassPipeline& pipeline, SizeFunction size_fn,
                           const AliasInfo* alias_info) {
  RematOptions options = CurrentRematOptions();
  if (!options.enabled) return;
  options = OptionsAfterCopyInsertion(std::move(options));
  pipeline.AddPass<RematerializationPass>(std::move(options),
                                          std::move(size_fn), alias_info);
}

absl::Status RunRematIfEnabled(HloModule* module, const SizeFunction& size_fn) {
  RematOptions options = CurrentRematOptions();
  if (!options.enabled) return absl::OkStatus();
  RematerializationPass pass(std::move(options), size_fn);
  return pass.Run(module, /*execution_threads=*/{}).status();
}

bool MultiOutputFusionDisabled() {
  const RematOptions options = CurrentRematOptions();
  return options.enabled && options.disable_cuda_fusions;
}

}  // namespace remat
}  // namespace xla
