// The figure memory is planned, judged and reported by: what the platform
// allocates for the module on its schedule.
//
// On CPU that is HeapSimulator's peak, which XLA:CPU's buffer assignment
// matches. On GPU it is BufferAssigner's total: HeapSimulator's module-wide
// minimum counts loop state once per computation naming it and misses
// buffers the assigner shares, where a real GPU allocates what buffer
// assignment says (docs/measured.md has both comparisons).
#ifndef XLA_SERVICE_REMAT_MEMORY_FIGURE_H_
#define XLA_SERVICE_REMAT_MEMORY_FIGURE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/buffer_assignment.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// MemoryFigure, MemoryFigureOptions and MemoryFigureName are in
// remat_options.h (the options' header stays free of buffer assignment).

// XLA's BufferAssigner on the module's own schedule, as the backends run it
// before emitting code: sequential ordering, constants given buffers.
absl::StatusOr<std::unique_ptr<BufferAssignment>> AssignBuffersOnSchedule(
    const HloModule& module, const SizeFunction& size_fn,
    const AliasInfo* alias_info, int64_t alignment);

// How the planner's tracker counts an output aliased with a donated
// parameter, for the figure it plans against (memory_tracker.h): in the
// parameter's allocation by BufferAssigner (GPU); apart, the parameter ending
// at its last use, by HeapSimulator's live ranges (CPU).
AliasedOutputs TrackerAliasedOutputs(MemoryFigure figure);

// The module's memory by `options.figure`; `alias_info` null: XLA's default.
absl::StatusOr<int64_t> MeasureMemory(const HloModule& module,
                                      const SizeFunction& size_fn,
                                      const AliasInfo* alias_info,
                                      const MemoryFigureOptions& options);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_MEMORY_FIGURE_H_
