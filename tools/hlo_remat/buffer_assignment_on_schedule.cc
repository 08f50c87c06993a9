#include "buffer_assignment_on_schedule.h"

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/analysis/hlo_ordering.h"
#include "xla/service/buffer_value.h"
#include "xla/service/logical_buffer.h"

namespace hlo_remat {

absl::StatusOr<std::unique_ptr<xla::BufferAssignment>> AssignBuffersOnSchedule(
    const xla::HloModule& module, const xla::remat::SizeFunction& size_fn,
    const xla::AliasInfo* alias_info, int64_t alignment) {
  if (!module.has_schedule()) {
    return absl::FailedPreconditionError(
        absl::StrCat("module ", module.name(), " has no schedule"));
  }
  xla::BufferAssigner::Options options;
  options.allocate_buffers_for_constants = true;
  return xla::BufferAssigner::Run(
      &module, std::make_unique<xla::SequentialHloOrdering>(module.schedule()),
      [size_fn](const xla::BufferValue& buffer) {
        return size_fn(buffer.shape());
      },
      alias_info,
      [alignment](xla::LogicalBuffer::Color) { return alignment; },
      std::move(options));
}

}  // namespace hlo_remat
