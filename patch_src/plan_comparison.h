// How the plan search tells which of two finished plans, each judged by the
// platform's figure (PlannerConfig::keep_plan), is the better one.
#ifndef XLA_SERVICE_REMAT_PLAN_COMPARISON_H_
#define XLA_SERVICE_REMAT_PLAN_COMPARISON_H_

#include <cstdint>

#include "xla/service/remat/planner_types.h"

namespace xla {
namespace remat {

// Whether the judge kept a plan that is within budget `target` (0: none).
bool MeetsBudget(const PlanVerdict& verdict, int64_t target);

// Whether the plan judged `mine` with `my_flops` is better than `theirs`
// with `their_flops` at budget `target` (0: none): a kept plan over one
// refused; one within the budget over one that is not; both within it, the
// cheaper; both over it, the lower, and at the same figure the cheaper.
bool BetterPlan(const PlanVerdict& mine, double my_flops,
                const PlanVerdict& theirs, double their_flops, int64_t target);

// A finished plan: the judge's verdict and the FLOPs its moves add.
struct JudgedPlan {
  PlanVerdict verdict;
  double flops = 0;
};

// BetterPlan, with the rule on FLOPs per byte for whole plans where both
// miss the budget: a plan lower than a cheaper one loses to it if it buys
// the bytes it saves below it at more than `out_of_line_factor` times the
// FLOPs per byte the cheaper plan spends below `initial_peak`: a plan can
// buy its last bytes at hundreds of times the rate of the rest
// (docs/measured.md). The budget comes first: a plan within it is never
// bought dearly. `out_of_line_factor` 0: no rule.
struct PlanComparison {
  int64_t target = 0;
  int64_t initial_peak = 0;
  double out_of_line_factor = kOutOfLineFactor;

  bool FirstIsBetter(const JudgedPlan& first, const JudgedPlan& second) const;
  // Whether `lower` (below `cheaper` by the judge's figure, for more FLOPs)
  // buys its bytes dearly, as above.
  bool BoughtDearly(const JudgedPlan& lower, const JudgedPlan& cheaper) const;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLAN_COMPARISON_H_
