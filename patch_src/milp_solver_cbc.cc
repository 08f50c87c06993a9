// SolveMilp with COIN-OR CBC's C interface (Debian: coinor-libcbc-dev), for
// the out-of-tree build. The C interface keeps CBC's C++ ABI out of the
// engine, which is built against the TensorFlow wheel's libraries.
#include <chrono>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "coin/Cbc_C_Interface.h"
#include "xla/service/remat/milp_solver.h"

namespace xla {
namespace remat {
namespace {

struct CbcModelDeleter {
  void operator()(Cbc_Model* model) const { Cbc_deleteModel(model); }
};

// CBC loads columns (compressed sparse columns); the problem has rows.
struct ColumnMajor {
  std::vector<CoinBigIndex> start;
  std::vector<int> index;
  std::vector<double> value;
};

ColumnMajor ToColumnMajor(const MilpProblem& problem) {
  const int columns = problem.columns();
  ColumnMajor out;
  out.start.assign(columns + 1, 0);
  for (int column : problem.index) ++out.start[column + 1];
  for (int column = 0; column < columns; ++column) {
    out.start[column + 1] += out.start[column];
  }
  out.index.resize(problem.index.size());
  out.value.resize(problem.value.size());
  std::vector<CoinBigIndex> next(out.start.begin(), out.start.end() - 1);
  for (int row = 0; row < problem.rows(); ++row) {
    for (int k = problem.row_start[row]; k < problem.row_start[row + 1]; ++k) {
      const CoinBigIndex at = next[problem.index[k]]++;
      out.index[at] = row;
      out.value[at] = problem.value[k];
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<MilpSolution> SolveMilp(const MilpProblem& problem,
                                       const MilpSolveOptions& options,
                                       absl::Span<const double> start) {
  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<Cbc_Model, CbcModelDeleter> model(Cbc_newModel());
  if (model == nullptr) return absl::InternalError("CBC: no model");
  const ColumnMajor matrix = ToColumnMajor(problem);
  Cbc_loadProblem(model.get(), problem.columns(), problem.rows(),
                  matrix.start.data(), matrix.index.data(), matrix.value.data(),
                  problem.column_lower.data(), problem.column_upper.data(),
                  problem.cost.data(), problem.row_lower.data(),
                  problem.row_upper.data());
  for (int column = 0; column < problem.columns(); ++column) {
    Cbc_setInteger(model.get(), column);
  }
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setMaximumSeconds(model.get(), options.time_limit_seconds);
  Cbc_setAllowableFractionGap(model.get(), options.relative_gap);
  // Wall-clock seconds, as the flag says (CBC counts CPU time otherwise).
  Cbc_setParameter(model.get(), "timeMode", "elapsed");
  if (static_cast<int>(start.size()) == problem.columns()) {
    std::vector<int> columns(start.size());
    for (int column = 0; column < problem.columns(); ++column) {
      columns[column] = column;
    }
    Cbc_setMIPStartI(model.get(), problem.columns(), columns.data(),
                     start.data());
  }
  const int run = Cbc_solve(model.get());
  MilpSolution solution;
  solution.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  if (Cbc_isAbandoned(model.get())) {
    return absl::InternalError(absl::StrCat(
        "CBC abandoned the solve (numerical difficulties; status ", run, ")"));
  }
  if (Cbc_isProvenInfeasible(model.get())) {
    solution.status = MilpStatus::kInfeasible;
    return solution;
  }
  // An incumbent exists when the best solution satisfies every row.
  const double* values = Cbc_bestSolution(model.get());
  if (values == nullptr) {
    solution.status = MilpStatus::kNoSolution;
    return solution;
  }
  solution.values.assign(values, values + problem.columns());
  solution.objective = Cbc_getObjValue(model.get());
  solution.status = Cbc_isProvenOptimal(model.get()) ? MilpStatus::kOptimal
                                                     : MilpStatus::kStopped;
  return solution;
}

absl::string_view MilpSolverName() { return "COIN-OR CBC"; }

}  // namespace remat
}  // namespace xla
