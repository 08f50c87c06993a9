// The memory-compute frontier of one computation, and how a budget is
// answered from it.
//
// The planner searches once per aim of a ladder fixed by the module alone
// (FrontierAims), never by the budget: each aim's plan is a point (its peak
// by the platform's figure, the FLOPs it adds). A budget is then a lookup:
// the cheapest point within it, else the lowest point. Because the points do
// not depend on the budget, the lookup keeps the promises a user reads into
// the flag, by construction:
//   - a tighter budget never ends higher;
//   - a budget is met whenever some usable plan (FrontierRules) meets it:
//     whenever any plan made meets it, unless the budget lies within the
//     noise share (1%) below a cheaper usable plan's peak;
//   - a met budget never spends more than a tighter budget's plan.
#ifndef XLA_SERVICE_REMAT_PLAN_FRONTIER_H_
#define XLA_SERVICE_REMAT_PLAN_FRONTIER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace xla {
namespace remat {

// One plan of the frontier search.
struct FrontierPoint {
  int64_t aim_bytes = 0;  // the target its search was given
  // The platform's figure of the computation with the plan applied.
  int64_t peak_bytes = 0;
  double extra_flops = 0;
  // False: the judge refused the plan (it did not lower the figure); the
  // point stands for the computation unchanged and is never chosen.
  bool kept = true;
  // The schedule its plan was made on: 0, the one the search started from;
  // k > 0, the k-th other schedule searched (FrontierSearch::other_schedules).
  int schedule = 0;
  // A plan between two neighbours of the frontier (FrontierSearch::
  // wide_step_flops): one sweep at aim_bytes under this compute cap (the
  // moves' own FLOPs). Negative: the aim's whole search, under the
  // search's cap.
  double cap_flops = -1;
  // False: for `path`, the plan of single recomputations at the floor aim
  // (PlanUnchainedAt), where chains can stall above what it reaches.
  bool chains = true;
};

// The aims of the frontier search: `shares` of `reference_bytes` (the
// module's figure before the pass, which budgets such as 0.5x are shares
// of) below `start_bytes` (the figure the planner starts from), and the
// floor itself when it is below the start; where fewer than three shares lie
// between the floor and the start, the quarters of that room too. Highest
// first, each once.
std::vector<int64_t> FrontierAims(absl::Span<const double> shares,
                                  int64_t reference_bytes, int64_t start_bytes,
                                  int64_t floor_bytes);

// The default shares: dense where budgets are usually set.
std::vector<double> DefaultFrontierShares();

// What makes a point of the search a plan the lookup may choose. A rule
// judges a point by the points alone, never by the budget, so that the
// lookup's promises hold. (No rule on FLOPs per byte here: one that drops
// a dear point drops the plan that meets some budget; below every point the
// compute cap bounds what the lowest spends.)
struct FrontierRules {
  // A point must lower the start by this share of the start, and every
  // cheaper usable point by this share of that point's peak: a smaller gain
  // is within what an allocator's fragmentation moves.
  double min_useful_reduction = 0.01;
  // Extra FLOPs this close are as good as equal: a point lowering a cheaper
  // usable point by less than the share above is still usable when it costs
  // at most this much more than that point.
  double flops_within_noise = 0;
};

// The points the lookup may choose (the rules above), of the
// non-dominated ones, highest (cheapest) first.
std::vector<int> UsablePoints(absl::Span<const FrontierPoint> points,
                              int64_t start_bytes, const FrontierRules& rules);

// The point answering `budget_bytes` (0: none, as low as it gets): none
// when `start_bytes` is within the budget; else, of the usable points, the
// cheapest within the budget, else the lowest. nullopt, no usable point:
// leave the computation unchanged.
std::optional<int> ChooseFromFrontier(absl::Span<const FrontierPoint> points,
                                      int64_t budget_bytes, int64_t start_bytes,
                                      const FrontierRules& rules);

// Indices of the points no other kept point dominates (as low and as cheap,
// one of them strictly), by peak ascending.
std::vector<int> NonDominated(absl::Span<const FrontierPoint> points);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLAN_FRONTIER_H_
