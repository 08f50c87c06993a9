#include "xla/service/remat/ranked_shortlist.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {

void RankedShortlist::Rank(absl::Span<const int> values,
                           absl::Span<const ScoreCache> scores) {
  heap_.clear();
  for (int value : values) {
    const std::vector<Candidate>& candidates = scores[value].candidates;
    for (int i = 0; i < static_cast<int>(candidates.size()); ++i) {
      const double score = CandidateScore(candidates[i]);
      if (!(score > -1)) continue;
      heap_.push_back({score, static_cast<int>(heap_.size()), {value, i}});
    }
  }
  std::make_heap(heap_.begin(), heap_.end());
}

std::optional<ShortlistPick> RankedShortlist::Best(
    const absl::flat_hash_set<int>& rejected) {
  while (!heap_.empty() && rejected.contains(heap_.front().pick.value)) {
    std::pop_heap(heap_.begin(), heap_.end());
    heap_.pop_back();
  }
  if (heap_.empty()) return std::nullopt;
  return heap_.front().pick;
}

}  // namespace remat
}  // namespace xla
