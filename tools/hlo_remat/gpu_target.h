// The GPU a deviceless compile targets: one of the specs embedded in the
// tensorflow wheel, by name, or a GpuTargetConfigProto text file.
#ifndef HLO_REMAT_GPU_TARGET_H_
#define HLO_REMAT_GPU_TARGET_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/stream_executor/device_description.pb.h"

namespace hlo_remat {

inline constexpr char kDefaultGpuTarget[] = "h100_sxm";

// The names --gpu-target accepts, in a stable order.
std::vector<std::string> GpuTargetNames();

// The embedded spec `name`; InvalidArgument naming --gpu-target, the value and
// the valid choices for an unknown name.
absl::StatusOr<stream_executor::GpuTargetConfigProto> GpuTargetByName(
    absl::string_view name);

// A GpuTargetConfigProto in text format (--gpu-target-file).
absl::StatusOr<stream_executor::GpuTargetConfigProto> GpuTargetFromFile(
    const std::string& path);

}  // namespace hlo_remat

#endif  // HLO_REMAT_GPU_TARGET_H_
