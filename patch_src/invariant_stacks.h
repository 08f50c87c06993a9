// Per-step stacks of one loop-invariant value, read instead of stored.
//
// TensorFlow's gradient of a loop pushes every value the backward loop needs
// onto a per-step stack carried by the forward loop (TensorListPushBack: a
// dynamic-update-slice into a [T, ...] buffer) and pops it in the backward
// loop (a dynamic-slice). When the pushed value is the same at every step (an
// LSTM's recurrent kernel), the stack holds T copies of a value that lives
// anyway. RemoveInvariantStacks proves that every row of such a stack is that
// value, makes the backward loop read the value itself, and removes the
// stacks' loop slots (XLA's WhileLoopSimplifier drops the dead slots).
#ifndef XLA_SERVICE_REMAT_INVARIANT_STACKS_H_
#define XLA_SERVICE_REMAT_INVARIANT_STACKS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

struct InvariantStacksResult {
  int64_t stacks_removed = 0;
  int64_t bytes_removed = 0;  // the stacks' sizes, once each
};

// Rewrites the entry computation's loop pairs. A scheduled module keeps a
// valid schedule (updated in place).
absl::StatusOr<InvariantStacksResult> RemoveInvariantStacks(
    HloModule* module, const SizeFunction& size_fn);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_INVARIANT_STACKS_H_
