// Proof that a scheduled module has no two values sharing a buffer whose live
// ranges overlap.
//
// On GPU, copy insertion runs after scheduling and removes every copy that
// the schedule it saw made unnecessary. A pass that re-orders the module
// later can make two values that share a buffer live at once: the program
// then reads an overwritten value. This check catches that.
#ifndef XLA_SERVICE_REMAT_LIVE_RANGE_CHECK_H_
#define XLA_SERVICE_REMAT_LIVE_RANGE_CHECK_H_

#include <string>

#include "absl/status/statusor.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"

namespace xla {
namespace remat {

// Returns "" when no two values of one buffer (HloAliasAnalysis under
// `alias_info`; null means XLA's default) may interfere under the module's
// schedule, else a description of the first pair found. Errors only when the
// module has no schedule or the analysis fails.
absl::StatusOr<std::string> FindLiveRangeInterference(
    const HloModule& module, const AliasInfo* alias_info);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_LIVE_RANGE_CHECK_H_
