// Spare fused computations for the planner's fusion clones.
//
// A clone of a fusion brings its own copy of the fused computation, and a
// clone taken back leaves that copy unreachable. A plan search makes and takes
// back thousands of clones. Cloning each body, and removing each orphan at
// the end (HloModule::RemoveEmbeddedComputation searches the module's
// computations linearly), took a large share of the pass (docs/measured.md).
// A removed clone's body is identical
// to the original's, so the next clone of the same fusion calls it instead.
#ifndef XLA_SERVICE_REMAT_FUSED_COMPUTATION_RECYCLER_H_
#define XLA_SERVICE_REMAT_FUSED_COMPUTATION_RECYCLER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"

namespace xla {
namespace remat {

class FusedComputationRecycler {
 public:
  // A clone of `original` (an instruction of `module`) named with `suffix`.
  // A fusion calls a spare copy of its fused computation when one is free;
  // otherwise, as any other instruction, it is cloned as HloInstruction::Clone
  // does.
  std::unique_ptr<HloInstruction> Clone(const HloInstruction& original,
                                        HloModule* module,
                                        const std::string& suffix);

  // The fused computation of a clone this recycler made, once that clone is
  // removed from its computation (so nothing calls it), is free for the next
  // clone of the same fusion. Other computations are ignored.
  void Release(HloComputation* fused);

  // The original fused computation `fused` is a copy of (clones of clones
  // map to the first original); null when this recycler made no such copy.
  const HloComputation* OriginalOf(const HloComputation* fused) const;

  // Spare computations waiting for a clone (for tests).
  int spare_count() const;

 private:
  // The original fused computation each copy this recycler handed out was
  // made from (clones of clones map to the first original).
  absl::flat_hash_map<const HloComputation*, const HloComputation*> copy_of_;
  // Free copies, by original, in the order the module made them: removed
  // clones come back in a hash set's order, and the copy a clone takes names
  // its fused computation in the output, which must not vary between runs.
  absl::flat_hash_map<const HloComputation*,
                      absl::btree_map<int64_t, HloComputation*>>
      spares_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_FUSED_COMPUTATION_RECYCLER_H_
