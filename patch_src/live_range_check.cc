#include "xla/service/remat/live_range_check.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/analysis/hlo_alias_analysis.h"
#include "xla/hlo/analysis/hlo_ordering.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/hlo_buffer.h"
#include "xla/service/hlo_value.h"
#include "xla/service/remat/alias_setup.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

absl::StatusOr<std::string> FindLiveRangeInterference(
    const HloModule& module, const AliasInfo* alias_info) {
  TF_ASSIGN_OR_RETURN(std::unique_ptr<AliasSetup> aliases,
                      AliasSetup::Run(module, alias_info));
  alias_info = aliases->alias_info();
  const HloAliasAnalysis* alias_analysis = &aliases->analysis();
  const SequentialHloOrdering ordering(module.schedule());
  const HloDataflowAnalysis& dataflow = alias_analysis->dataflow_analysis();
  // Only values of scheduled computations have an order; values inside
  // fusions live and die within their fusion instruction.
  auto ordered = [&](const HloValue* value) {
    return module.schedule().is_computation_scheduled(
        value->defining_instruction()->parent());
  };
  for (const HloBuffer& buffer : alias_analysis->buffers()) {
    std::vector<const HloValue*> values;
    for (const HloValue* value : buffer.values()) {
      if (ordered(value)) values.push_back(value);
    }
    for (size_t i = 0; i < values.size(); ++i) {
      for (size_t j = i + 1; j < values.size(); ++j) {
        if (ordering.MayInterfere(*values[i], *values[j], dataflow,
                                  alias_info)) {
          return absl::StrCat(values[i]->ToShortString(), " and ",
                              values[j]->ToShortString(),
                              " share a buffer and are live at once");
        }
      }
    }
  }
  return std::string();
}

}  // namespace remat
}  // namespace xla
