#include "xla/service/remat/optimal_plan.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/planner_edits.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

// The one movable value the instruction at `slot` defines, or -1: a
// multi-output producer whose elements are read apart would need one move
// per element, each cloning the whole producer, which the model does not
// count.
int SoleValueAt(const PlannerState& state, int slot) {
  const ValueTable& values = state.values();
  const HloInstruction* instruction = state.sequence()[slot];
  int found = -1;
  for (int index : values.DefinedAt(slot)) {
    if (values[index].producer != instruction) continue;
    if (found >= 0 || !values[index].movable) return -1;
    found = index;
  }
  return found;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OptimalProblem>> OptimalProblem::Build(
    const PlannerState& state, int depth) {
  TF_ASSIGN_OR_RETURN(
      RematGraph graph,
      BuildRematGraph(state.module()->name(), state.initial_memory(),
                      state.costs(), state.config().min_candidate_bytes,
                      OverwrittenAt(state.liveness())));
  std::unique_ptr<OptimalProblem> problem(new OptimalProblem(std::move(graph)));
  problem->sequence_ = state.sequence();
  const std::vector<RematGraphNode>& nodes = problem->graph_.nodes;
  std::vector<bool> may_recompute(nodes.size(), false);
  problem->value_of_node_.assign(nodes.size(), -1);
  for (size_t node = 0; node < nodes.size(); ++node) {
    if (!nodes[node].candidate) continue;
    const int value = SoleValueAt(state, nodes[node].position);
    problem->value_of_node_[node] = value;
    may_recompute[node] = value >= 0;
  }
  problem->model_.emplace(problem->graph_, depth, may_recompute);
  return problem;
}

CopiesInHand CopiesOfPlanInHand(const PlannerState& state) {
  const ValueTable& values = state.values();
  CopiesInHand copies;
  for (int slot = 0; slot < state.slot_count(); ++slot) {
    const HloInstruction* original = state.sequence()[slot];
    for (int index : values.DefinedAt(slot)) {
      if (values[index].producer != original) continue;
      OptimalModel::NodePlan& plan = copies[original];
      for (int version : values.VersionsOf(values[index].origin)) {
        const Value& copy = values[version];
        if (copy.dead) {
          plan.dropped |= version == index;
          continue;
        }
        if (version != index) plan.recomputed_at.push_back(copy.def);
        plan.alive.push_back({copy.def, state.liveness().End(copy.buffer)});
      }
      // No copy read: its own stage only.
      if (plan.alive.empty() && !plan.dropped) {
        plan.alive.push_back({slot, slot});
      }
    }
  }
  return copies;
}

std::vector<double> OptimalProblem::StartFrom(
    const CopiesInHand& copies) const {
  std::vector<OptimalModel::NodePlan> plans(graph_.nodes.size());
  for (size_t node = 0; node < plans.size(); ++node) {
    auto found = copies.find(sequence_[graph_.nodes[node].position]);
    if (found != copies.end()) plans[node] = found->second;
  }
  return model_->SolutionOf(plans);
}

absl::StatusOr<OptimalSolve> OptimalProblem::Solve(
    int64_t target_bytes, double max_extra_flops,
    const MilpSolveOptions& options, absl::Span<const double> start) const {
  const MilpProblem problem =
      model_->MinFlopsProblem(target_bytes, max_extra_flops);
  OptimalSolve solve;
  solve.columns = problem.columns();
  solve.rows = problem.rows();
  TF_ASSIGN_OR_RETURN(const MilpSolution solution,
                      SolveMilp(problem, options, start));
  solve.status = solution.status;
  solve.seconds = solution.seconds;
  if (solution.values.empty()) return solve;
  solve.plan = model_->Plan(solution.values);
  solve.model_peak = model_->Peak(solution.values);
  solve.model_extra_flops = model_->ExtraFlops(solution.values);
  return solve;
}

absl::Status OptimalProblem::Apply(PlannerState& state,
                                   const OptimalSolve& solve) const {
  // The version of each node's value that later uses read.
  std::vector<int> current = value_of_node_;
  std::vector<int> placed_here;
  int stage = -1;
  for (const Recomputation& step : solve.plan) {
    if (step.stage != stage) {
      stage = step.stage;
      placed_here.clear();
    }
    const int value = current[step.node];
    if (value < 0 || step.stage <= 0) {
      return absl::InternalError(
          absl::StrCat("optimal plan recomputes node ", step.node, " at stage ",
                       step.stage, ", which the model was not given"));
    }
    Candidate candidate;
    candidate.kind = MoveKind::kRecompute;
    candidate.value = value;
    candidate.first_late = step.stage;
    candidate.chain = {value};
    candidate.reads_placed = placed_here;
    candidate.flops = graph_.nodes[step.node].flops;
    candidate.cost = state.values()[value].cost;
    // Uses from the stage on read the clone: the sweep is just before it.
    state.set_sweep_slot(step.stage - 1);
    TF_RETURN_IF_ERROR(ApplyMove(state, candidate, step.stage - 1));
    const int fresh = state.values().size() - 1;
    if (state.values()[fresh].def != step.stage) {
      return absl::InternalError(
          absl::StrCat("optimal plan: the clone of node ", step.node,
                       " is not at stage ", step.stage));
    }
    current[step.node] = fresh;
    placed_here.push_back(fresh);
  }
  return absl::OkStatus();
}

}  // namespace remat
}  // namespace xla
