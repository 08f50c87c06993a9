#include "xla/service/remat/range_max_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace xla {
namespace remat {
namespace {

TEST(RangeMaxTreeTest, EmptyTreeHasMaxZero) {
  RangeMaxTree tree({});
  EXPECT_EQ(tree.size(), 0);
  EXPECT_EQ(tree.Max(), 0);
  tree.Add(0, 3, 7);  // clipped to nothing
  EXPECT_EQ(tree.Max(), 0);
}

TEST(RangeMaxTreeTest, BuildsFromValues) {
  RangeMaxTree tree({3, -1, 8, 2});
  EXPECT_EQ(tree.Max(), 8);
  EXPECT_EQ(tree.At(0), 3);
  EXPECT_EQ(tree.At(1), -1);
  EXPECT_EQ(tree.At(3), 2);
}

TEST(RangeMaxTreeTest, RangesAreClippedAndEmptyRangesIgnored) {
  RangeMaxTree tree({0, 0, 0});
  tree.Add(-5, 0, 4);   // only position 0
  tree.Add(2, 99, 1);   // only position 2
  tree.Add(2, 1, 100);  // empty
  EXPECT_EQ(tree.At(0), 4);
  EXPECT_EQ(tree.At(1), 0);
  EXPECT_EQ(tree.At(2), 1);
  EXPECT_EQ(tree.Max(), 4);
}

TEST(RangeMaxTreeTest, NegativeDeltasLowerTheMax) {
  RangeMaxTree tree({5, 9, 5});
  tree.Add(1, 1, -6);
  EXPECT_EQ(tree.Max(), 5);
  tree.Add(0, 2, -5);
  EXPECT_EQ(tree.Max(), 0);
  EXPECT_EQ(tree.At(1), -2);
}

// The planner's use: many range updates between queries, checked against a
// plain vector.
TEST(RangeMaxTreeTest, MatchesBruteForceOnRandomUpdates) {
  std::mt19937 rng(7);
  for (int n : {1, 2, 3, 17, 64, 257}) {
    std::uniform_int_distribution<int64_t> value(-1000, 1000);
    std::vector<int64_t> expected(n);
    for (int64_t& v : expected) v = value(rng);
    RangeMaxTree tree(expected);
    std::uniform_int_distribution<int> position(-2, n + 1);
    for (int step = 0; step < 500; ++step) {
      const int lo = position(rng), hi = position(rng);
      const int64_t delta = value(rng);
      tree.Add(lo, hi, delta);
      for (int i = std::max(lo, 0); i <= std::min(hi, n - 1); ++i) {
        expected[i] += delta;
      }
      ASSERT_EQ(tree.Max(), *std::max_element(expected.begin(), expected.end()))
          << "n=" << n << " step=" << step;
      const int probe = std::uniform_int_distribution<int>(0, n - 1)(rng);
      ASSERT_EQ(tree.At(probe), expected[probe]);
      const int from = position(rng), to = position(rng);
      const int clipped_from = std::max(from, 0);
      const int clipped_to = std::min(to, n - 1);
      const int64_t range_max =
          clipped_from > clipped_to
              ? std::numeric_limits<int64_t>::min()
              : *std::max_element(expected.begin() + clipped_from,
                                  expected.begin() + clipped_to + 1);
      ASSERT_EQ(tree.Max(from, to), range_max)
          << "n=" << n << " step=" << step << " [" << from << ", " << to << "]";
    }
  }
}

}  // namespace
}  // namespace remat
}  // namespace xla
