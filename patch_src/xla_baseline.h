// The `xla` algorithm: XLA's own HloRematerialization, recompute only, as the
// baseline every report puts our heuristics beside.
#ifndef XLA_SERVICE_REMAT_XLA_BASELINE_H_
#define XLA_SERVICE_REMAT_XLA_BASELINE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

struct XlaBaselineResult {
  bool changed = false;
  int64_t reported_before_bytes = -1;  // as HloRematerialization counts it
  int64_t reported_after_bytes = -1;
};

// `memory_limit_bytes` 0 asks for as little memory as it can reach.
absl::StatusOr<XlaBaselineResult> RunXlaRematerialization(
    HloModule* module, int64_t memory_limit_bytes, int64_t min_remat_bytes,
    const SizeFunction& size_fn);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_XLA_BASELINE_H_
