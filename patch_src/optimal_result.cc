#include "xla/service/remat/optimal_result.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xla/service/remat/json_text.h"

namespace xla {
namespace remat {

absl::string_view OptimalOutcomeName(OptimalOutcome outcome) {
  switch (outcome) {
    case OptimalOutcome::kNotRun:
      return "not run";
    case OptimalOutcome::kSolverPlanKept:
      return "solver plan kept";
    case OptimalOutcome::kPathBetter:
      return "path plan kept: the solver's was no better";
    case OptimalOutcome::kInfeasible:
      // The model counts as the planner does (no in-place reuse), so it can
      // find no plan where `path`'s meets the budget by the platform's figure.
      return "path plan kept: the MILP's model, which counts memory as the "
             "planner does (stricter than the platform's figure), has no plan "
             "within the budget";
    case OptimalOutcome::kTimedOut:
      return "path plan kept: the time limit passed before the solver had a "
             "plan";
    case OptimalOutcome::kTooLarge:
      return "path plan kept: the model is too large to solve within the "
             "time limit";
  }
  return "unknown";
}

std::string OptimalResultJson(const OptimalResult& r) {
  return absl::StrCat(
      "{\"outcome\": ", JsonQuote(OptimalOutcomeName(r.outcome)),
      ", \"solver\": ", JsonQuote(r.solver),
      ", \"status\": ", JsonQuote(r.status), ", \"depth\": ", r.depth,
      ", \"seconds\": ", JsonNumber(r.seconds), ", \"columns\": ", r.columns,
      ", \"rows\": ", r.rows, ", \"model_budget_bytes\": ", r.model_budget,
      ", \"model_peak_bytes\": ", r.model_peak,
      ", \"model_extra_flops\": ", JsonNumber(r.model_extra_flops),
      ", \"path_peak_bytes\": ", r.path_peak,
      ", \"path_extra_flops\": ", JsonNumber(r.path_extra_flops),
      ", \"solver_peak_bytes\": ", r.solver_peak,
      ", \"solver_extra_flops\": ", JsonNumber(r.solver_extra_flops), "}");
}

}  // namespace remat
}  // namespace xla
