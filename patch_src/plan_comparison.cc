#include "xla/service/remat/plan_comparison.h"

#include <cstdint>

namespace xla {
namespace remat {

bool MeetsBudget(const PlanVerdict& verdict, int64_t target) {
  return verdict.keep && target > 0 && verdict.simulated_peak <= target;
}

bool BetterPlan(const PlanVerdict& mine, double my_flops,
                const PlanVerdict& theirs, double their_flops, int64_t target) {
  if (!mine.keep) return false;
  if (!theirs.keep) return true;
  const bool i_meet = MeetsBudget(mine, target);
  const bool they_meet = MeetsBudget(theirs, target);
  if (i_meet != they_meet) return i_meet;
  if (i_meet) return my_flops < their_flops;
  if (mine.simulated_peak != theirs.simulated_peak) {
    return mine.simulated_peak < theirs.simulated_peak;
  }
  return my_flops < their_flops;
}

bool PlanComparison::BoughtDearly(const JudgedPlan& lower,
                                  const JudgedPlan& cheaper) const {
  const int64_t lower_peak = lower.verdict.simulated_peak;
  const int64_t cheaper_peak = cheaper.verdict.simulated_peak;
  if (out_of_line_factor <= 0 || !lower.verdict.keep || !cheaper.verdict.keep ||
      MeetsBudget(lower.verdict, target) || lower.flops <= cheaper.flops ||
      lower_peak >= cheaper_peak || cheaper_peak >= initial_peak) {
    return false;
  }
  const double own_rate =
      cheaper.flops / static_cast<double>(initial_peak - cheaper_peak);
  const double extra_rate = (lower.flops - cheaper.flops) /
                            static_cast<double>(cheaper_peak - lower_peak);
  return extra_rate > out_of_line_factor * own_rate;
}

bool PlanComparison::FirstIsBetter(const JudgedPlan& first,
                                   const JudgedPlan& second) const {
  const bool first_better = BetterPlan(first.verdict, first.flops,
                                       second.verdict, second.flops, target);
  if (first_better) return !BoughtDearly(first, second);
  return BoughtDearly(second, first);
}

}  // namespace remat
}  // namespace xla
