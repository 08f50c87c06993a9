#include "gpu_target.h"

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/text_format.h"
#include "xla/backends/gpu/target_config/embed_gpu_specs.h"
#include "xla/stream_executor/device_description.pb.h"

namespace hlo_remat {
namespace {

using SpecFn = const std::string& (*)();

// Every spec embed_gpu_specs.h declares, under the name of its getter.
constexpr std::pair<const char*, SpecFn> kSpecs[] = {
    {"a100_pcie_80", &xla::gpu::get_a100_pcie_80},
    {"a100_sxm_40", &xla::gpu::get_a100_sxm_40},
    {"a100_sxm_80", &xla::gpu::get_a100_sxm_80},
    {"a6000", &xla::gpu::get_a6000},
    {"b200", &xla::gpu::get_b200},
    {"b300", &xla::gpu::get_b300},
    {"h100_pcie", &xla::gpu::get_h100_pcie},
    {"h100_sxm", &xla::gpu::get_h100_sxm},
    {"mi200", &xla::gpu::get_mi200},
    {"p100", &xla::gpu::get_p100},
    {"v100", &xla::gpu::get_v100},
};

absl::StatusOr<stream_executor::GpuTargetConfigProto> ParseSpec(
    const std::string& text, absl::string_view origin) {
  stream_executor::GpuTargetConfigProto proto;
  if (!google::protobuf::TextFormat::ParseFromString(text, &proto)) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": not a GpuTargetConfigProto in text format"));
  }
  return proto;
}

}  // namespace

std::vector<std::string> GpuTargetNames() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : kSpecs) names.push_back(name);
  return names;
}

absl::StatusOr<stream_executor::GpuTargetConfigProto> GpuTargetByName(
    absl::string_view name) {
  for (const auto& [spec_name, fn] : kSpecs) {
    if (name == spec_name) {
      return ParseSpec(fn(), absl::StrCat("embedded spec ", name));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--gpu-target=", name,
      " is not a known GPU; valid: ", absl::StrJoin(GpuTargetNames(), ", ")));
}

absl::StatusOr<stream_executor::GpuTargetConfigProto> GpuTargetFromFile(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu-target-file ", path, ": cannot read"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseSpec(text.str(), absl::StrCat("--gpu-target-file ", path));
}

}  // namespace hlo_remat
