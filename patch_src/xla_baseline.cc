#include "xla/service/remat/xla_baseline.h"

#include <cstdint>

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/transforms/simplifiers/hlo_rematerialization.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

absl::StatusOr<XlaBaselineResult> RunXlaRematerialization(
    HloModule* module, int64_t memory_limit_bytes, int64_t min_remat_bytes,
    const SizeFunction& size_fn) {
  HloCostAnalysis cost_analysis(size_fn);
  HloRematerialization::Options options(
      cost_analysis,
      HloRematerialization::RematerializationModeConfig(
          /*recompute=*/true, /*compress=*/false, /*host_offload=*/false),
      memory_limit_bytes, /*block_size_limit=*/1,
      /*block_rematerialization_factor=*/1, min_remat_bytes,
      /*compact_shape_function=*/nullptr);
  HloRematerialization::RematerializationSizes sizes;
  HloRematerialization pass(options, sizes);
  XlaBaselineResult result;
  TF_ASSIGN_OR_RETURN(result.changed, pass.Run(module));
  result.reported_before_bytes = sizes.before_bytes;
  result.reported_after_bytes = sizes.after_bytes;
  return result;
}

}  // namespace remat
}  // namespace xla
