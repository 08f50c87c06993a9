// The planner's edits of the HLO: applying a move (clones or compact copies
// placed at their slots, late uses redirected, producers left unused marked
// dead), taking it back, and at the end turning the plan into the module
// (the final order, instructions removed, control edges that pin clones
// after their trigger points and reads before overwrites).
//
// Separate from scoring so that everything that mutates the module or the
// liveness model goes through one place that also logs how to undo it.
#ifndef XLA_SERVICE_REMAT_PLANNER_EDITS_H_
#define XLA_SERVICE_REMAT_PLANNER_EDITS_H_

#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/remat/judging_copy.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {

// Applies `candidate` at `slot` (the sweep's) as the newest move, with its
// decision.
absl::Status ApplyMove(PlannerState& state, const Candidate& candidate,
                       int slot);

// Takes move `move_index` back: the liveness model and the uses are as
// before it, and its instructions are left for removal.
absl::Status RevertMove(PlannerState& state, int move_index);

// Takes the newest move back as soon as it was made, forgets it, and deletes
// its instructions at once: the next clones reuse their fused computations.
absl::Status DiscardNewestMove(PlannerState& state);

// Deletes the instructions of moves taken back, so that copying and judging
// the plan does not carry them; the fused computations of their clones serve
// the next clones. (Removed instructions stay allocated until the
// computation's Cleanup, which the planner never runs: a new instruction
// cannot take a removed one's address, which the move log still holds.)
absl::Status DropTakenBack(PlannerState& state);

// The extra FLOPs of the plan in hand as the module it writes runs them:
// the moves kept, less the runs the plan leaves without a reader (an
// original every use of which reads a clone, or a clone a later clone took
// every use from), which the written module no longer has.
double PlanExtraFlops(const PlannerState& state);

// What the plan in hand leaves: the producers no use is left for, and the
// order of the computation with the clones and copies at their slots.
struct FinalOrder {
  absl::flat_hash_set<const HloInstruction*> dead;
  HloInstructionSequence sequence;
};
FinalOrder ComputeFinalOrder(const PlannerState& state);

// A copy of the module with the plan applied (same names, the planned
// order), for checking the plan before it is applied.
absl::StatusOr<std::unique_ptr<HloModule>> PlannedCopy(PlannerState& state);
// The same for the judge: its fusions call stand-in bodies (judging_copy.h).
// `order` must be ComputeFinalOrder of the plan in hand.
absl::StatusOr<JudgingCopy> JudgingCopyOf(PlannerState& state,
                                          const FinalOrder& order);

// Applies the plan to the module: removes what it leaves unused, sets the
// planned order and adds the control edges the plan needs.
absl::StatusOr<PlannerResult> Materialize(PlannerState& state);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLANNER_EDITS_H_
