#include "module_output.h"

#include <fstream>
#include <ios>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/ir/hlo_module.h"

namespace hlo_remat {

absl::Status WriteModule(const std::string& path,
                         const xla::HloModule& module) {
  const bool as_proto = absl::EndsWith(path, ".pb");
  std::ofstream out(path, as_proto ? std::ios::binary : std::ios::out);
  if (as_proto) {
    out << module.ToProto().SerializeAsString();
  } else {
    out << module.ToString();
  }
  if (!out) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot write"));
  }
  return absl::OkStatus();
}

}  // namespace hlo_remat
