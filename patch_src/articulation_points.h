// Articulation points of a computation's dataflow graph, for `path`.
//
// The graph is undirected: one node per instruction, one edge per operand.
// An articulation point is an instruction whose removal disconnects it; every
// value after one depends on the rest of the program only through it, so the
// chains between consecutive points can be recomputed from the point alone.
#ifndef XLA_SERVICE_REMAT_ARTICULATION_POINTS_H_
#define XLA_SERVICE_REMAT_ARTICULATION_POINTS_H_

#include "absl/container/flat_hash_set.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"

namespace xla {
namespace remat {

// Iterative (no recursion on deep graphs), O(instructions + operands).
absl::flat_hash_set<const HloInstruction*> ArticulationPoints(
    const HloComputation& computation);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_ARTICULATION_POINTS_H_
