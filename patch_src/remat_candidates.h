// Which instructions may be recomputed.
#ifndef XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_
#define XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"

namespace xla {
namespace remat {

// True when recomputing `instruction` elsewhere yields the same value with no
// other effect: not a parameter or constant, no side effect (also inside a
// fusion), no custom-call, collective, RNG, control flow, async op, dot or
// convolution, an
// array result, and no control successors whose order would be lost.
bool IsRecomputable(const HloInstruction* instruction);

// Entry parameters whose buffers the module's outputs overwrite in place
// (input_output_alias, e.g. donated weights updated by the optimizer).
absl::flat_hash_set<int64_t> DonatedParameters(const HloModule& module);

// The donated parameters `instruction` reads, directly or through bitcasts
// and tuple accesses. A recomputation of it must run before the outputs that
// overwrite them are written.
std::vector<int64_t> DonatedParametersRead(
    const HloInstruction* instruction,
    const absl::flat_hash_set<int64_t>& donated);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_
