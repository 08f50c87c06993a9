// SolveMilp with OR-Tools' MPSolver (CP-SAT's integer programming), for the
// in-tree build: XLA's auto-sharding links the same target
// (@com_google_ortools//ortools/linear_solver), so the pass adds no new
// dependency to TensorFlow.
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ortools/linear_solver/linear_solver.h"
#include "xla/service/remat/milp_solver.h"

namespace xla {
namespace remat {

using ::operations_research::MPConstraint;
using ::operations_research::MPSolver;
using ::operations_research::MPVariable;

absl::StatusOr<MilpSolution> SolveMilp(const MilpProblem& problem,
                                       const MilpSolveOptions& options,
                                       absl::Span<const double> start) {
  const auto started = std::chrono::steady_clock::now();
  auto solver =
      std::make_unique<MPSolver>("remat", MPSolver::SAT_INTEGER_PROGRAMMING);
  std::vector<MPVariable*> columns;
  columns.reserve(problem.columns());
  for (int column = 0; column < problem.columns(); ++column) {
    columns.push_back(solver->MakeIntVar(problem.column_lower[column],
                                         problem.column_upper[column], ""));
    solver->MutableObjective()->SetCoefficient(columns.back(),
                                               problem.cost[column]);
  }
  solver->MutableObjective()->SetMinimization();
  for (int row = 0; row < problem.rows(); ++row) {
    MPConstraint* constraint = solver->MakeRowConstraint(
        problem.row_lower[row], problem.row_upper[row]);
    for (int k = problem.row_start[row]; k < problem.row_start[row + 1]; ++k) {
      constraint->SetCoefficient(columns[problem.index[k]], problem.value[k]);
    }
  }
  if (static_cast<int>(start.size()) == problem.columns()) {
    std::vector<std::pair<const MPVariable*, double>> hint;
    for (int column = 0; column < problem.columns(); ++column) {
      hint.push_back({columns[column], start[column]});
    }
    solver->SetHint(std::move(hint));
  }
  // One worker: the pass shares the machine with the compiler's own threads.
  solver->SetSolverSpecificParametersAsString(absl::StrCat(
      "num_workers:1,max_time_in_seconds:", options.time_limit_seconds,
      ",relative_gap_limit:", options.relative_gap));
  const MPSolver::ResultStatus result = solver->Solve();
  MilpSolution solution;
  solution.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  switch (result) {
    case MPSolver::OPTIMAL:
      solution.status = MilpStatus::kOptimal;
      break;
    case MPSolver::FEASIBLE:
      solution.status = MilpStatus::kStopped;
      break;
    case MPSolver::INFEASIBLE:
      solution.status = MilpStatus::kInfeasible;
      return solution;
    case MPSolver::NOT_SOLVED:
      solution.status = MilpStatus::kNoSolution;
      return solution;
    default:
      return absl::InternalError(absl::StrCat(
          "OR-Tools could not solve the rematerialization MILP (status ",
          static_cast<int>(result), ")"));
  }
  solution.values.reserve(columns.size());
  for (const MPVariable* column : columns) {
    solution.values.push_back(column->solution_value());
  }
  solution.objective = solver->Objective().Value();
  return solution;
}

absl::string_view MilpSolverName() { return "OR-Tools CP-SAT"; }

}  // namespace remat
}  // namespace xla
