// SolveMilp with HiGHS, for the out-of-tree build: the C API of the
// libhighs.so.1 that the highspy wheel ships (highs_c_api_1_15_1.h), so the
// engine needs nothing from apt and solves with the same HiGHS as
// `remat-harness optimum`. The C API keeps HiGHS's C++ ABI out of the engine.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "xla/service/remat/highs_c_api_1_15_1.h"
#include "xla/service/remat/milp_solver.h"
#include "xla/tsl/platform/errors.h"

namespace xla {
namespace remat {
namespace {

struct HighsDeleter {
  void operator()(void* highs) const { Highs_destroy(highs); }
};
using HighsHandle = std::unique_ptr<void, HighsDeleter>;

absl::Status SetOptions(void* highs, const MilpSolveOptions& options) {
  // Wall-clock seconds for the whole run, presolve and the root included.
  const bool ok =
      Highs_setBoolOptionValue(highs, "output_flag", 0) !=
          highs::kStatusError &&
      Highs_setDoubleOptionValue(highs, "time_limit",
                                 options.time_limit_seconds) !=
          highs::kStatusError &&
      Highs_setDoubleOptionValue(highs, "mip_rel_gap", options.relative_gap) !=
          highs::kStatusError;
  if (!ok) return absl::InternalError("HiGHS refused an option");
  return absl::OkStatus();
}

absl::Status PassProblem(void* highs, const MilpProblem& problem) {
  const std::vector<HighsInt> start(problem.row_start.begin(),
                                    problem.row_start.end());
  const std::vector<HighsInt> index(problem.index.begin(), problem.index.end());
  const std::vector<HighsInt> integrality(problem.columns(),
                                          highs::kVarTypeInteger);
  const HighsInt status = Highs_passMip(
      highs, problem.columns(), problem.rows(),
      static_cast<HighsInt>(problem.index.size()), highs::kMatrixFormatRowwise,
      highs::kObjSenseMinimize, /*offset=*/0, problem.cost.data(),
      problem.column_lower.data(), problem.column_upper.data(),
      problem.row_lower.data(), problem.row_upper.data(), start.data(),
      index.data(), problem.value.data(), integrality.data());
  if (status == highs::kStatusError) {
    return absl::InternalError(absl::StrCat("HiGHS refused the model (",
                                            problem.columns(), " columns, ",
                                            problem.rows(), " rows)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MilpSolution> SolveMilp(const MilpProblem& problem,
                                       const MilpSolveOptions& options,
                                       absl::Span<const double> start) {
  HighsHandle highs(Highs_create());
  if (highs == nullptr) return absl::InternalError("HiGHS: no instance");
  TF_RETURN_IF_ERROR(SetOptions(highs.get(), options));
  TF_RETURN_IF_ERROR(PassProblem(highs.get(), problem));
  // A start that breaks a row is dropped by HiGHS (a warning, not an error).
  if (static_cast<int>(start.size()) == problem.columns()) {
    Highs_setSolution(highs.get(), start.data(), nullptr, nullptr, nullptr);
  }
  MilpSolution solution;
  const auto started = std::chrono::steady_clock::now();
  const HighsInt run = Highs_run(highs.get());
  solution.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  if (run == highs::kStatusError) {
    return absl::InternalError(
        absl::StrCat("HiGHS failed to solve the model (model status ",
                     Highs_getModelStatus(highs.get()), ")"));
  }
  const HighsInt model_status = Highs_getModelStatus(highs.get());
  if (model_status == highs::kModelStatusInfeasible) {
    solution.status = MilpStatus::kInfeasible;
    return solution;
  }
  HighsInt primal = 0;
  if (Highs_getIntInfoValue(highs.get(), "primal_solution_status", &primal) ==
      highs::kStatusError) {
    return absl::InternalError("HiGHS gave no primal solution status");
  }
  if (primal != highs::kSolutionStatusFeasible) {
    solution.status = MilpStatus::kNoSolution;
    return solution;
  }
  solution.values.resize(problem.columns());
  if (Highs_getSolution(highs.get(), solution.values.data(), nullptr, nullptr,
                        nullptr) == highs::kStatusError) {
    return absl::InternalError("HiGHS gave no solution values");
  }
  solution.objective = Highs_getObjectiveValue(highs.get());
  solution.status = model_status == highs::kModelStatusOptimal
                        ? MilpStatus::kOptimal
                        : MilpStatus::kStopped;
  return solution;
}

absl::string_view MilpSolverName() { return "HiGHS 1.15.1 (highspy wheel)"; }

}  // namespace remat
}  // namespace xla
