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

// Whether the uses of the value `reader` holds (`producer` itself, or one of
// its get-tuple-elements) can be handed a clone of `producer` instead:
// neither a reader other than the producer nor a bitcast of it orders other
// instructions (control successors), and no user, directly or through
// bitcasts, holds on to the value as a whole (tuple, get-tuple-element,
// while, add-dependency, optimization barrier, domain), whose later uses
// cannot be redirected alone. The planner's rule for a movable value, and
// the exported graph's.
bool UsesCanTakeAClone(const HloInstruction& producer,
                       const HloInstruction& reader);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_CANDIDATES_H_
