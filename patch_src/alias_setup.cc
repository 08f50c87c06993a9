#include "xla/service/remat/alias_setup.h"

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/analysis/hlo_alias_analysis.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

absl::StatusOr<std::unique_ptr<AliasSetup>> AliasSetup::Run(
    const HloModule& module, const AliasInfo* alias_info,
    ScheduleNeeded schedule) {
  if (schedule == ScheduleNeeded::kYes && !module.has_schedule()) {
    return absl::FailedPreconditionError(
        absl::StrCat("module ", module.name(), " has no schedule"));
  }
  std::unique_ptr<AliasSetup> setup(new AliasSetup(alias_info));
  TF_ASSIGN_OR_RETURN(setup->analysis_,
                      HloAliasAnalysis::Run(&module, setup->alias_info()));
  return setup;
}

}  // namespace remat
}  // namespace xla
