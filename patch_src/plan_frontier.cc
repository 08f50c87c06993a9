#include "xla/service/remat/plan_frontier.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/types/span.h"

namespace xla {
namespace remat {
namespace {

// Fewer aims than this between the floor and the start: the room's quarters
// are aimed at too.
constexpr int kLeastAimsAboveTheFloor = 3;

}  // namespace

std::vector<double> DefaultFrontierShares() {
  return {0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.33, 0.25};
}

std::vector<int64_t> FrontierAims(absl::Span<const double> shares,
                                  int64_t reference_bytes, int64_t start_bytes,
                                  int64_t floor_bytes) {
  std::vector<int64_t> aims;
  // At the floor already: no plan can lower it, whatever it aims at.
  if (floor_bytes >= start_bytes) return aims;
  // An aim below the floor too: no plan reaches it, but a search aimed
  // there lowers every position as far as it goes and tries aims of its own
  // between it and the start, which can end lower than aiming at the floor
  // does (docs/measured.md). One such aim, the lowest, whose own aims span
  // the most of that room: the searches of the others tried the same kind of
  // plans again, for most of the frontier's time (DenseNet-121 on CPU: three
  // of its nine aims, 6.5 of 15 s, none of their plans usable).
  std::optional<int64_t> below_the_floor;
  for (double share : shares) {
    const auto aim = static_cast<int64_t>(share * reference_bytes);
    if (aim <= 0 || aim >= start_bytes) continue;
    if (aim < floor_bytes) {
      below_the_floor = std::min(aim, below_the_floor.value_or(aim));
    } else {
      aims.push_back(aim);
    }
  }
  if (below_the_floor.has_value()) aims.push_back(*below_the_floor);
  if (floor_bytes > 0 && floor_bytes < start_bytes) {
    // Where the shares leave the room between the floor and the start
    // nearly empty, every aim lies below what the search reaches and all of
    // them end at the same dear plan; a budget just under the start then pays
    // for it (ResNet-50 on CPU: 0.632 of the allocation at +20.9%, where an
    // aim in the room finds 0.651 at +2.4%). The room's quarters fill it.
    const auto in_room =
        std::count_if(aims.begin(), aims.end(),
                      [&](int64_t aim) { return aim >= floor_bytes; });
    if (in_room < kLeastAimsAboveTheFloor) {
      const int64_t room = start_bytes - floor_bytes;
      for (int quarter = 1; quarter <= 3; ++quarter) {
        aims.push_back(floor_bytes + room * quarter / 4);
      }
    }
    aims.push_back(floor_bytes);
  }
  std::sort(aims.begin(), aims.end(), std::greater<int64_t>());
  aims.erase(std::unique(aims.begin(), aims.end()), aims.end());
  return aims;
}

std::vector<int> UsablePoints(absl::Span<const FrontierPoint> points,
                              int64_t start_bytes, const FrontierRules& rules) {
  // A smaller gain is within what an allocator's fragmentation moves, bought
  // with recomputation on every step: not a plan. The same holds between
  // plans, where the lower one costs more than noise: it buys noise with its
  // extra FLOPs (ResNet-101 V2 for h100_sxm: 0.8068 of the allocation at
  // +0.44%, 0.8035 at +12.0%). Noise is a share of the memory in use: of the
  // start below the start, of the cheaper plan's peak between plans. (A share
  // of the start there hid plans far below it that meet budgets the cheaper
  // one misses: DenseNet-121 at batch 1462 for a100_sxm_40 starts at 124.7
  // GB, and 39.68 GB at +5.3% met the 40.02 GB budget that 40.68 GB at +3.9%
  // missed.)
  //
  // Every cheaper usable point is compared, not only the last: noise taken
  // as equal, step by step, adds up (InceptionV3's CPU step: 0.6106 of the
  // allocation at +17.4%, 5 KB lower at +18.3%, 160 KB lower again at
  // +18.6%, each step within 1% of the FLOPs, the last 1.2% over the first).
  const double least_saved = rules.min_useful_reduction * start_bytes;
  std::vector<int> usable;
  auto buys_noise = [&](const FrontierPoint& point,
                        const FrontierPoint& cheaper) {
    const bool small_gain =
        static_cast<double>(cheaper.peak_bytes - point.peak_bytes) <
        rules.min_useful_reduction * cheaper.peak_bytes;
    return small_gain &&
           point.extra_flops - cheaper.extra_flops > rules.flops_within_noise;
  };
  // From the highest (cheapest) point of the frontier down.
  const std::vector<int> frontier = NonDominated(points);
  for (auto it = frontier.rbegin(); it != frontier.rend(); ++it) {
    const FrontierPoint& point = points[*it];
    if (static_cast<double>(start_bytes - point.peak_bytes) < least_saved) {
      continue;
    }
    if (absl::c_any_of(usable, [&](int cheaper) {
          return buys_noise(point, points[cheaper]);
        })) {
      continue;
    }
    usable.push_back(*it);
  }
  return usable;
}

std::optional<int> ChooseFromFrontier(absl::Span<const FrontierPoint> points,
                                      int64_t budget_bytes, int64_t start_bytes,
                                      const FrontierRules& rules) {
  // The computation as given is the cheapest point of all.
  if (budget_bytes > 0 && start_bytes <= budget_bytes) return std::nullopt;
  // Highest first: the first within the budget is the cheapest within it.
  const std::vector<int> usable = UsablePoints(points, start_bytes, rules);
  for (int i : usable) {
    if (budget_bytes > 0 && points[i].peak_bytes <= budget_bytes) return i;
  }
  if (usable.empty()) return std::nullopt;
  return usable.back();
}

std::vector<int> NonDominated(absl::Span<const FrontierPoint> points) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(points.size()); ++i) {
    if (points[i].kept) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (points[a].peak_bytes != points[b].peak_bytes) {
      return points[a].peak_bytes < points[b].peak_bytes;
    }
    return points[a].extra_flops < points[b].extra_flops;
  });
  // By peak ascending, a point survives when it is cheaper than every lower.
  std::vector<int> frontier;
  for (int i : order) {
    if (frontier.empty() ||
        points[i].extra_flops < points[frontier.back()].extra_flops) {
      frontier.push_back(i);
    }
  }
  return frontier;
}

}  // namespace remat
}  // namespace xla
