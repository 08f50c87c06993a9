// What every memory figure of a scheduled module starts from: the target's
// AliasInfo (or XLA's default, target_alias_info.h) and the module's alias
// analysis under it, made together so that the AliasInfo outlives the
// analysis that reads it.
#ifndef XLA_SERVICE_REMAT_ALIAS_SETUP_H_
#define XLA_SERVICE_REMAT_ALIAS_SETUP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/analysis/hlo_alias_analysis.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/target_alias_info.h"

namespace xla {
namespace remat {

// Whether the analysis is for figures of the module's order (a simulated
// heap, live ranges), which a module without a schedule does not have.
enum class ScheduleNeeded { kYes, kNo };

class AliasSetup {
 public:
  // FailedPrecondition when the schedule is needed and the module has none.
  static absl::StatusOr<std::unique_ptr<AliasSetup>> Run(
      const HloModule& module, const AliasInfo* alias_info,
      ScheduleNeeded schedule = ScheduleNeeded::kYes);

  AliasSetup(const AliasSetup&) = delete;
  AliasSetup& operator=(const AliasSetup&) = delete;

  const AliasInfo* alias_info() const { return target_.get(); }
  const HloAliasAnalysis& analysis() const { return *analysis_; }

 private:
  explicit AliasSetup(const AliasInfo* given) : target_(given) {}

  TargetAliasInfo target_;
  std::unique_ptr<HloAliasAnalysis> analysis_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_ALIAS_SETUP_H_
