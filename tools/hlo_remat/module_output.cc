#include "module_output.h"

#include <fstream>
#include <ios>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/ir/hlo_module.h"

namespace hlo_remat {

absl::Status WriteText(const std::string& path, const std::string& text,
                       bool binary) {
  std::ofstream out(path, binary ? std::ios::binary : std::ios::out);
  out << text;
  if (!out) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot write"));
  }
  return absl::OkStatus();
}

absl::Status WriteModule(const std::string& path,
                         const xla::HloModule& module) {
  if (absl::EndsWith(path, ".pb")) {
    return WriteText(path, module.ToProto().SerializeAsString(),
                     /*binary=*/true);
  }
  return WriteText(path, module.ToString());
}

}  // namespace hlo_remat
