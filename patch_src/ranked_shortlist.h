// The next best move of a slot while moves tried there are refused one by
// one (over the compute cap, or raising the peak elsewhere).
//
// The sweep scans a slot's values once and keeps those with candidates (its
// shortlist). After a refusal, scanning the shortlist again for the next
// best made DenseNet-121's pass scan 1.7 billion entries in 6 million
// scans; ranked once as a heap, the next best is popped instead. The
// ranking picks what the scan picks: the highest gain per cost, and of
// equal scores the first met.
#ifndef XLA_SERVICE_REMAT_RANKED_SHORTLIST_H_
#define XLA_SERVICE_REMAT_RANKED_SHORTLIST_H_

#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {

// What a slot's moves are ranked by: bytes of gain per unit of cost.
inline double CandidateScore(const Candidate& candidate) {
  return static_cast<double>(candidate.gain) / candidate.cost;
}

// A candidate of the shortlist: its value and its place among the value's
// candidates.
struct ShortlistPick {
  int value;
  int candidate;
};

class RankedShortlist {
 public:
  // Ranks every candidate of `values`, met in that order and each value's
  // candidates in theirs (`scores[value].candidates`). A score of -1 or
  // less, which a scan starting from -1 never keeps, is left out.
  void Rank(absl::Span<const int> values, absl::Span<const ScoreCache> scores);

  // The best candidate whose value is not in `rejected`; nullopt when none
  // is left. A rejection is for good: the value's candidates leave the
  // ranking.
  std::optional<ShortlistPick> Best(const absl::flat_hash_set<int>& rejected);

 private:
  struct Entry {
    double score;
    int met;
    ShortlistPick pick;
    // A max-heap's top is the best: the highest score, the first met of
    // equals.
    bool operator<(const Entry& other) const {
      if (score != other.score) return score < other.score;
      return met > other.met;
    }
  };
  std::vector<Entry> heap_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_RANKED_SHORTLIST_H_
