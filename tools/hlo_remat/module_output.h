#ifndef HLO_REMAT_MODULE_OUTPUT_H_
#define HLO_REMAT_MODULE_OUTPUT_H_

#include <string>

#include "absl/status/status.h"
#include "xla/hlo/ir/hlo_module.h"

namespace hlo_remat {

// Writes `text` to `path` (`binary`: as bytes); InvalidArgument naming the
// path when it cannot be written.
absl::Status WriteText(const std::string& path, const std::string& text,
                       bool binary = false);

// Writes `module` to `path`: a binary HloModuleProto (schedule, layouts and
// backend configs included) where the path ends in ".pb", the form another
// XLA build compiles backend-only (scripts/fit_gpu_check_backend_only.py);
// HLO text otherwise. InvalidArgument names the path when it cannot be
// written.
absl::Status WriteModule(const std::string& path, const xla::HloModule& module);

}  // namespace hlo_remat

#endif  // HLO_REMAT_MODULE_OUTPUT_H_
