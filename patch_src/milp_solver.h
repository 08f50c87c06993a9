// A mixed-integer linear program and the one call that solves it, so that
// the `optimal` algorithm does not depend on which solver library the build
// has: OR-Tools in-tree (XLA's auto-sharding already links it), HiGHS out of
// tree (the highspy wheel's libhighs.so.1). Each build compiles exactly one
// of milp_solver_ortools.cc and milp_solver_highs.cc.
#ifndef XLA_SERVICE_REMAT_MILP_SOLVER_H_
#define XLA_SERVICE_REMAT_MILP_SOLVER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace xla {
namespace remat {

// Minimise cost . x subject to row_lower <= A x <= row_upper and
// column_lower <= x <= column_upper, every column integer. A is given by
// rows: row r's terms are index/value[row_start[r], row_start[r + 1]).
struct MilpProblem {
  std::vector<double> cost;
  std::vector<double> column_lower;
  std::vector<double> column_upper;
  std::vector<int> row_start = {0};
  std::vector<int> index;
  std::vector<double> value;
  std::vector<double> row_lower;
  std::vector<double> row_upper;

  int columns() const { return static_cast<int>(cost.size()); }
  int rows() const { return static_cast<int>(row_lower.size()); }
  // Adds a column; returns its index.
  int AddColumn(double column_cost, double lower, double upper);
  // Adds a row over (column, coefficient) terms; zero coefficients dropped.
  void AddRow(const std::vector<std::pair<int, double>>& terms, double lower,
              double upper);
};

struct MilpSolveOptions {
  double time_limit_seconds = 60;
  double relative_gap = 1e-4;
};

enum class MilpStatus {
  kOptimal,     // proven optimal within the relative gap
  kStopped,     // the time limit ended the search; an incumbent exists
  kNoSolution,  // the time limit ended the search before any incumbent
  kInfeasible,  // proven infeasible
};

absl::string_view MilpStatusName(MilpStatus status);

struct MilpSolution {
  MilpStatus status = MilpStatus::kNoSolution;
  std::vector<double> values;  // the incumbent; empty without one
  double objective = 0;        // of the incumbent
  double seconds = 0;
};

// Solves `problem` under `options`, from the incumbent `start` (a value per
// column; empty: none; the solver drops a start that breaks a row). A solver
// failure (not infeasibility, not the time limit) is an error.
absl::StatusOr<MilpSolution> SolveMilp(const MilpProblem& problem,
                                       const MilpSolveOptions& options,
                                       absl::Span<const double> start = {});

// The library behind SolveMilp in this build, for reports.
absl::string_view MilpSolverName();

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_MILP_SOLVER_H_
