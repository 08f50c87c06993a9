// The `optimal` algorithm's plan: the MILP of optimal_model.h, built from
// the planner's graph of the schedule it starts from, solved (milp_solver.h)
// from `path`'s plan, and applied through the planner's edits
// (planner_edits.h), so that the plan is judged, reported and undone like
// every other.
#ifndef XLA_SERVICE_REMAT_OPTIMAL_PLAN_H_
#define XLA_SERVICE_REMAT_OPTIMAL_PLAN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/milp_solver.h"
#include "xla/service/remat/optimal_model.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/remat_graph.h"

namespace xla {
namespace remat {

struct OptimalSolve {
  MilpStatus status = MilpStatus::kNoSolution;
  double seconds = 0;
  int columns = 0;
  int rows = 0;
  // Of the solution, in the model (the tracker's count): set with a plan.
  int64_t model_peak = 0;
  double model_extra_flops = 0;
  std::vector<Recomputation> plan;
};

// Per original instruction, the copies of its value a plan keeps (as the
// model's NodePlan).
using CopiesInHand =
    absl::flat_hash_map<const HloInstruction*, OptimalModel::NodePlan>;

// The plan in hand in `state`.
CopiesInHand CopiesOfPlanInHand(const PlannerState& state);

// The MILP of one planner state's schedule.
class OptimalProblem {
 public:
  // The model of `state`'s schedule; no move may be in hand.
  static absl::StatusOr<std::unique_ptr<OptimalProblem>> Build(
      const PlannerState& state, int depth);

  // The model's columns: its size before the memory rows of an aim.
  int columns() const { return model_->columns(); }

  // A plan's copies (CopiesOfPlanInHand) as a solution of the model, to
  // start from.
  std::vector<double> StartFrom(const CopiesInHand& copies) const;

  // The least extra FLOPs that bring the model's peak to `target_bytes`
  // within `max_extra_flops` (negative: no cap).
  absl::StatusOr<OptimalSolve> Solve(int64_t target_bytes,
                                     double max_extra_flops,
                                     const MilpSolveOptions& options,
                                     absl::Span<const double> start) const;

  // Applies `solve.plan` to `state` (no move in hand): one move per
  // recomputation, stage by stage, operands first.
  absl::Status Apply(PlannerState& state, const OptimalSolve& solve) const;

 private:
  explicit OptimalProblem(RematGraph graph) : graph_(std::move(graph)) {}

  const RematGraph graph_;
  std::vector<HloInstruction*> sequence_;  // the schedule, by position
  // The planner's value of each node the plan may recompute; -1 otherwise.
  std::vector<int> value_of_node_;
  std::optional<OptimalModel> model_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_OPTIMAL_PLAN_H_
