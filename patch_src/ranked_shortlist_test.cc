#include "xla/service/remat/ranked_shortlist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {
namespace {

// What BestCandidate's scan of the shortlist picks: the first candidate
// with the highest score above -1, of values not rejected.
std::optional<ShortlistPick> Scan(const std::vector<int>& values,
                                  const std::vector<ScoreCache>& scores,
                                  const absl::flat_hash_set<int>& rejected) {
  std::optional<ShortlistPick> best;
  double best_score = -1;
  for (int value : values) {
    if (rejected.contains(value)) continue;
    const std::vector<Candidate>& candidates = scores[value].candidates;
    for (int i = 0; i < static_cast<int>(candidates.size()); ++i) {
      if (CandidateScore(candidates[i]) > best_score) {
        best_score = CandidateScore(candidates[i]);
        best = ShortlistPick{value, i};
      }
    }
  }
  return best;
}

Candidate WithScore(int64_t gain, double cost) {
  Candidate candidate;
  candidate.gain = gain;
  candidate.cost = cost;
  return candidate;
}

TEST(RankedShortlistTest, EqualScoresGoToTheFirstMet) {
  std::vector<ScoreCache> scores(3);
  scores[2].candidates = {WithScore(4, 2), WithScore(6, 3)};
  scores[0].candidates = {WithScore(2, 1)};
  RankedShortlist ranked;
  ranked.Rank({2, 0}, scores);
  std::optional<ShortlistPick> pick = ranked.Best({});
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->value, 2);
  EXPECT_EQ(pick->candidate, 0);
  pick = ranked.Best({2});
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->value, 0);
  EXPECT_FALSE(ranked.Best({2, 0}).has_value());
}

// Random shortlists with many ties, values refused one at a time as
// LowerSlot refuses them: the ranking picks what a scan picks each time.
TEST(RankedShortlistTest, PicksWhatAScanPicksUnderRefusals) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int value_count = 1 + random() % 12;
    std::vector<ScoreCache> scores(value_count);
    std::vector<int> values;
    for (int value = 0; value < value_count; ++value) {
      const int candidates = random() % 4;
      for (int i = 0; i < candidates; ++i) {
        scores[value].candidates.push_back(
            WithScore(static_cast<int64_t>(random() % 5) - 1,
                      1 + static_cast<double>(random() % 3)));
      }
      if (random() % 4 != 0) values.push_back(value);
    }
    std::shuffle(values.begin(), values.end(), random);
    RankedShortlist ranked;
    ranked.Rank(values, scores);
    absl::flat_hash_set<int> rejected;
    while (true) {
      const std::optional<ShortlistPick> expected =
          Scan(values, scores, rejected);
      const std::optional<ShortlistPick> got = ranked.Best(rejected);
      ASSERT_EQ(got.has_value(), expected.has_value()) << "trial " << trial;
      if (!expected.has_value()) break;
      EXPECT_EQ(got->value, expected->value) << "trial " << trial;
      EXPECT_EQ(got->candidate, expected->candidate) << "trial " << trial;
      // The pick is refused; sometimes another value is rejected too (a
      // move over the cap), as a slot's refusals come.
      rejected.insert(expected->value);
      if (random() % 3 == 0) rejected.insert(random() % value_count);
    }
  }
}

}  // namespace
}  // namespace remat
}  // namespace xla
