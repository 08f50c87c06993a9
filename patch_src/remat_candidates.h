// Which instructions may be recomputed.
#ifndef XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_
#define XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_

#include "xla/hlo/ir/hlo_instruction.h"

namespace xla {
namespace remat {

// True when recomputing `instruction` elsewhere yields the same value with no
// other effect: not a parameter or constant, no side effect (also inside a
// fusion), no custom-call, collective, RNG, control flow, async op, dot or
// convolution, an array result, and no control successors whose order would
// be lost.
bool IsRecomputable(const HloInstruction* instruction);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_
