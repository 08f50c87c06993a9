// Last readers run early: an instruction that is the last to read operand
// buffers larger than the buffers it defines is moved, in the schedule of the
// entry computation, to just after the last of its operands and of their
// other readers. Its operands die there instead of where the given schedule
// put it; only its (smaller) result lives longer.
//
// Why: XLA:GPU's scheduler leaves cuDNN weight-gradient convolutions
// (dw = conv(x, dy)) at the end of the step. Each holds its layer's
// activation and output gradient across the rest of the backward pass, and
// no recomputation frees them: they are read late, not produced early
// (docs/measured.md has how much they hold). Moving an
// instruction reorders computation; it adds and removes none.
//
// An instruction that writes a buffer in place moves too: XLA:GPU's fused
// optimizer updates write each weight into its donated parameter, and the
// scheduler leaves them at the end of the step, holding every weight
// gradient and transposed weight they read. It never moves ahead of a
// use of what the buffer held before, so that copy insertion's buffer
// sharing holds in the new order.
//
// Never moved: instructions with side effects or control edges, control
// flow, async and collective ops, custom-calls off the library allow-list,
// aliases (bitcast, get-tuple-element, tuple) and the root.
#ifndef XLA_SERVICE_REMAT_LAST_READER_HOIST_H_
#define XLA_SERVICE_REMAT_LAST_READER_HOIST_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

struct HoistResult {
  int moved = 0;
  // Over the moves: operand bytes that die earlier, less the bytes each
  // moved instruction defines (what it frees between its new and old place).
  int64_t bytes_freed = 0;
};

// Moves the last readers of the scheduled entry computation earlier, one at
// a time in schedule order. `alias_info` null: XLA's default.
absl::StatusOr<HoistResult> HoistLastReaders(HloModule* module,
                                             const SizeFunction& size_fn,
                                             const AliasInfo* alias_info);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_LAST_READER_HOIST_H_
