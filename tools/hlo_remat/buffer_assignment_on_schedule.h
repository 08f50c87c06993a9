// XLA's BufferAssigner on a module's own schedule, as the backends run it
// before emitting code: what the allocator is actually asked for.
#ifndef HLO_REMAT_BUFFER_ASSIGNMENT_ON_SCHEDULE_H_
#define HLO_REMAT_BUFFER_ASSIGNMENT_ON_SCHEDULE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/buffer_assignment.h"
#include "xla/service/remat/size_function.h"

namespace hlo_remat {

// Sequential ordering from the module's schedule, constants given buffers
// (the backends' default), every allocation `alignment`-aligned.
absl::StatusOr<std::unique_ptr<xla::BufferAssignment>> AssignBuffersOnSchedule(
    const xla::HloModule& module, const xla::remat::SizeFunction& size_fn,
    const xla::AliasInfo* alias_info, int64_t alignment);

}  // namespace hlo_remat

#endif  // HLO_REMAT_BUFFER_ASSIGNMENT_ON_SCHEDULE_H_
