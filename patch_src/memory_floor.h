// The memory floor: a lower bound on the peak that no schedule and no
// recomputation can beat, so a report can say how much room is left.
//
// Entry parameters are live for the whole step; each instruction needs the
// values it uses and the values it produces at once; the module's outputs
// exist at the end. Values that share a buffer (HloAliasAnalysis: in-place
// ops, donated parameters, while loops) count once, and a result that the
// HeapSimulator may place in a dying operand's buffer counts once with it.
// On CPU, XLA's live ranges end a donated parameter at its last use (the
// tracker too, memory_tracker.h); the floor still counts it throughout, as
// a training step holds the weight or the update replacing it at every
// point. A module that drops a donated parameter early can go below it.
#ifndef XLA_SERVICE_REMAT_MEMORY_FLOOR_H_
#define XLA_SERVICE_REMAT_MEMORY_FLOOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

struct MemoryFloor {
  int64_t bytes = 0;            // the floor
  int64_t parameter_bytes = 0;  // entry parameters, live throughout
  std::string at;  // the instruction that sets it ("live-out" for the end)
};

// Independent of the module's schedule (it needs none). `alias_info` is the
// target's; null means XLA's default AliasInfo.
absl::StatusOr<MemoryFloor> ComputeMemoryFloor(
    const HloModule& module, const SizeFunction& size_fn,
    const AliasInfo* alias_info = nullptr);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_MEMORY_FLOOR_H_
