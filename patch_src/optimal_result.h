// What the `optimal` algorithm did: the solve and the two plans it judged.
// Shared by the planner, which fills it, and the report, which writes it.
#ifndef XLA_SERVICE_REMAT_OPTIMAL_RESULT_H_
#define XLA_SERVICE_REMAT_OPTIMAL_RESULT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace xla {
namespace remat {

enum class OptimalOutcome {
  kNotRun,
  // The solver's plan is kept: it met the budget for less recomputation
  // than `path`'s, or went lower where both missed.
  kSolverPlanKept,
  // The solver's plan was no better by the platform's figure.
  kPathBetter,
  // No plan of the model meets the budget (nor `path`'s peak).
  kInfeasible,
  // The time limit passed before the solver had a plan.
  kTimedOut,
  // The model is too large for the solver to start within its time limit:
  // not solved (OptimalConfig::max_columns).
  kTooLarge,
};

struct OptimalResult {
  OptimalOutcome outcome = OptimalOutcome::kNotRun;
  std::string solver;  // the library (milp_solver.h)
  int depth = 0;       // the chain depth of the model the plan came from
  std::string status;  // of the last solve (MilpStatusName)
  double seconds = 0;  // in the solver, all solves
  int columns = 0;     // of the last solve
  int rows = 0;
  int64_t model_budget = 0;  // the tracker bytes the last solve aimed at
  int64_t model_peak = 0;    // its plan's peak in the model
  double model_extra_flops = 0;
  // The platform's figure and the FLOPs of each plan, as judged.
  int64_t path_peak = 0;
  double path_extra_flops = 0;
  int64_t solver_peak = 0;
  double solver_extra_flops = 0;
};

absl::string_view OptimalOutcomeName(OptimalOutcome outcome);

// The result as a JSON object (the report's "optimal" field).
std::string OptimalResultJson(const OptimalResult& result);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_OPTIMAL_RESULT_H_
