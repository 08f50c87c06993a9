// The identity of the plan in hand as the judge sees it, so that a plan the
// search makes again is judged once.
//
// The searches come back to plans they made before (a trim that ends where
// the sweep did, the same sweep under another aim, the plan a search keeps
// made again to apply it): on DenseNet-121 a quarter of the judgements were
// of a plan judged already, each a copy, an alias analysis and a simulation
// of the whole module. The signature describes everything the judge's copy
// (PlannedCopy) is made from: the computation's instructions in their order,
// each by what it computes, where the planned order runs it, and the
// instructions it reads and follows. Two plans with one signature give
// copies that differ in names and ids only, which no memory figure reads, so
// one verdict serves both: exact, whatever the search did in between.
#ifndef XLA_SERVICE_REMAT_PLAN_SIGNATURE_H_
#define XLA_SERVICE_REMAT_PLAN_SIGNATURE_H_

#include <string>

#include "xla/service/remat/planner_edits.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {

// The signature of the plan in hand; `order` is its ComputeFinalOrder.
// An instruction of the computation as the planner found it is named by its
// slot; a clone of a fusion by the slot of the original whose fused
// computation it calls a copy of; anything else the planner added by its
// text without names.
std::string PlanSignature(const PlannerState& state, const FinalOrder& order);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLAN_SIGNATURE_H_
