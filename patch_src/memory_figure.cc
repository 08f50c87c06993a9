#include "xla/service/remat/memory_figure.h"

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/analysis/hlo_ordering.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/buffer_assignment.h"
#include "xla/service/buffer_value.h"
#include "xla/service/logical_buffer.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/remat_schedule.h"
#include "xla/service/remat/size_function.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

absl::StatusOr<std::unique_ptr<BufferAssignment>> AssignBuffersOnSchedule(
    const HloModule& module, const SizeFunction& size_fn,
    const AliasInfo* alias_info, int64_t alignment) {
  if (!module.has_schedule()) {
    return absl::FailedPreconditionError(
        absl::StrCat("module ", module.name(), " has no schedule"));
  }
  // BufferAssigner needs a real AliasInfo, as HloAliasAnalysis does.
  AliasInfo default_alias_info;
  BufferAssigner::Options options;
  options.allocate_buffers_for_constants = true;
  return BufferAssigner::Run(
      &module, std::make_unique<SequentialHloOrdering>(module.schedule()),
      [size_fn](const BufferValue& buffer) { return size_fn(buffer.shape()); },
      alias_info != nullptr ? alias_info : &default_alias_info,
      [alignment](LogicalBuffer::Color) { return alignment; },
      std::move(options));
}

AliasedOutputs TrackerAliasedOutputs(MemoryFigure figure) {
  return figure == MemoryFigure::kHeapSimulator ? AliasedOutputs::kOwnBytes
                                                : AliasedOutputs::kInParameter;
}

absl::StatusOr<int64_t> MeasureMemory(const HloModule& module,
                                      const SizeFunction& size_fn,
                                      const AliasInfo* alias_info,
                                      const MemoryFigureOptions& options) {
  if (options.figure == MemoryFigure::kHeapSimulator) {
    return HeapSimulatorPeak(module, size_fn, alias_info);
  }
  TF_ASSIGN_OR_RETURN(
      std::unique_ptr<BufferAssignment> assignment,
      AssignBuffersOnSchedule(module, size_fn, alias_info, options.alignment));
  return assignment->GetStats().total_allocation_bytes;
}

}  // namespace remat
}  // namespace xla
