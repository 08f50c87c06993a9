// Which instructions may be recomputed.
#ifndef XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_
#define XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_

#include "xla/hlo/ir/hlo_instruction.h"

namespace xla {
namespace remat {

// How a producer may be recomputed elsewhere, yielding the same values with
// no other effect. Never: parameters, constants, anything with a side effect
// (also inside a fusion), custom-calls outside the library allow-list
// (library_calls.h), collectives, RNG, control flow, async ops, forwarding
// ops (tuple, get-tuple-element, bitcast), and producers with control
// successors whose order would be lost.
enum class ProducerKind {
  kNotRecomputable,
  // One array result: the clone is the value.
  kArray,
  // A flat tuple of arrays (cuDNN convolutions with their scratch, cuBLAS
  // GEMMs with their workspace, multi-output fusions): a late use gets its
  // element from a clone through a get-tuple-element, and the clone's other
  // outputs are transient at the clone's position.
  kMultiOutput,
};

ProducerKind ClassifyProducer(const HloInstruction* instruction);

inline bool IsRecomputable(const HloInstruction* instruction) {
  return ClassifyProducer(instruction) != ProducerKind::kNotRecomputable;
}

// A user that holds on to the value it reads as a whole (tuple,
// get-tuple-element, while, add-dependency, optimization barrier, domain):
// its later uses cannot be redirected to a clone alone.
bool PinsWhatItReads(const HloInstruction& user);

// Whether each later reader of `reader`'s value (its users, and theirs
// through bitcasts) can be handed a clone instead: no user pins it and no
// bitcast of it orders other instructions (control successors).
bool ReadersCanTakeAClone(const HloInstruction& reader);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_
