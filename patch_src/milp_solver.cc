#include "xla/service/remat/milp_solver.h"

#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace xla {
namespace remat {

int MilpProblem::AddColumn(double column_cost, double lower, double upper) {
  cost.push_back(column_cost);
  column_lower.push_back(lower);
  column_upper.push_back(upper);
  return columns() - 1;
}

void MilpProblem::AddRow(const std::vector<std::pair<int, double>>& terms,
                         double lower, double upper) {
  for (const auto& [column, coefficient] : terms) {
    if (coefficient == 0) continue;
    index.push_back(column);
    value.push_back(coefficient);
  }
  row_lower.push_back(lower);
  row_upper.push_back(upper);
  row_start.push_back(static_cast<int>(index.size()));
}

absl::string_view MilpStatusName(MilpStatus status) {
  switch (status) {
    case MilpStatus::kOptimal:
      return "optimal";
    case MilpStatus::kStopped:
      return "stopped at the time limit with a plan";
    case MilpStatus::kNoSolution:
      return "stopped at the time limit without a plan";
    case MilpStatus::kInfeasible:
      return "infeasible";
  }
  return "unknown";
}

}  // namespace remat
}  // namespace xla
