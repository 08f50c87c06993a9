#include "xla/service/remat/plan_frontier.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace xla {
namespace remat {
namespace {

constexpr int64_t kFrontierStartBytes = 1000;

FrontierRules Rules() { return FrontierRules(); }

// The peak and FLOPs the lookup gives `budget` (the start when unchanged).
struct Answer {
  int64_t peak;
  double flops;
};
Answer AnswerFor(const std::vector<FrontierPoint>& points, int64_t budget,
                 const FrontierRules& rules) {
  const std::optional<int> chosen =
      ChooseFromFrontier(points, budget, kFrontierStartBytes, rules);
  if (!chosen.has_value()) return {kFrontierStartBytes, 0};
  return {points[*chosen].peak_bytes, points[*chosen].extra_flops};
}

TEST(FrontierAimsTest, SharesBelowTheStartAndTheFloorHighestFirst) {
  EXPECT_EQ(FrontierAims({0.9, 0.7, 0.5, 0.5, 0.2, 0.1}, 1000, 800, 150),
            (std::vector<int64_t>{700, 500, 200, 150, 100}));
  // No floor known: only the shares.
  EXPECT_EQ(FrontierAims({0.5}, 1000, 800, 0), (std::vector<int64_t>{500}));
  // The start at the floor: nothing can be lowered, whatever the aim.
  EXPECT_TRUE(FrontierAims({0.5}, 1000, 800, 800).empty());
}

TEST(FrontierAimsTest, OneAimBelowTheFloorTheLowest) {
  // 0.4, 0.3 and 0.2 of 1000 lie below the floor (450): their searches all
  // lower every position as far as it goes; the lowest stands for them.
  EXPECT_EQ(FrontierAims({0.9, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2}, 1000, 800, 450),
            (std::vector<int64_t>{700, 600, 500, 450, 200}));
  // Shares in any order.
  EXPECT_EQ(FrontierAims({0.2, 0.4, 0.7, 0.3, 0.6, 0.5}, 1000, 800, 450),
            (std::vector<int64_t>{700, 600, 500, 450, 200}));
}

TEST(FrontierAimsTest, AnAlmostEmptyRoomAboveTheFloorIsAimedAtInQuarters) {
  // One share between the floor (600) and the start (680): the room's
  // quarters are aims too, so a plan lies between the start and the lowest.
  EXPECT_EQ(FrontierAims({0.9, 0.65, 0.5}, 1000, 680, 600),
            (std::vector<int64_t>{660, 650, 640, 620, 600, 500}));
  // Three shares in the room already: none added.
  EXPECT_EQ(FrontierAims({0.9, 0.7, 0.6, 0.5}, 1000, 800, 400),
            (std::vector<int64_t>{700, 600, 500, 400}));
}

TEST(ChooseFromFrontierTest, CheapestWithinElseLowest) {
  const std::vector<FrontierPoint> points = {
      {900, 800, 1.0}, {500, 520, 5.0}, {400, 480, 9.0}, {300, 470, 30.0}};
  EXPECT_EQ(ChooseFromFrontier(points, 850, kFrontierStartBytes, Rules()), 0);
  EXPECT_EQ(ChooseFromFrontier(points, 500, kFrontierStartBytes, Rules()), 2);
  // Nothing within: the lowest.
  EXPECT_EQ(ChooseFromFrontier(points, 100, kFrontierStartBytes, Rules()), 3);
  // No budget: the lowest.
  EXPECT_EQ(ChooseFromFrontier(points, 0, kFrontierStartBytes, Rules()), 3);
  // The start within the budget: nothing to do, for nothing.
  EXPECT_EQ(ChooseFromFrontier(points, kFrontierStartBytes, kFrontierStartBytes,
                               Rules()),
            std::nullopt);
}

TEST(ChooseFromFrontierTest, RefusedAndUselessPlansAreNotChosen) {
  std::vector<FrontierPoint> points = {{900, 995, 1.0}, {500, 400, 5.0}};
  points[1].kept = false;
  // Under 1% below the start is no plan, whatever the budget: otherwise a
  // budget of 996 would end at 995 and one of 994 higher, unchanged.
  EXPECT_EQ(ChooseFromFrontier(points, 500, kFrontierStartBytes, Rules()),
            std::nullopt);
  EXPECT_EQ(ChooseFromFrontier(points, 996, kFrontierStartBytes, Rules()),
            std::nullopt);
  // Not below the start at all: unchanged.
  EXPECT_EQ(
      ChooseFromFrontier({{900, 1000, 0.0}}, 0, kFrontierStartBytes, Rules()),
      std::nullopt);
}

TEST(UsablePointsTest, TheFrontierAbove1PercentHighestFirst) {
  const std::vector<FrontierPoint> points = {{0, 995, 0.0},
                                             {0, 800, 0.04},
                                             {0, 692, 3.9},
                                             {0, 661, 25.0},
                                             {0, 700, 9}};
  EXPECT_EQ(UsablePoints(points, kFrontierStartBytes, FrontierRules()),
            (std::vector<int>{1, 2, 3}));
}

TEST(UsablePointsTest, APointUnder1PercentBelowACheaperOneIsNoPlan) {
  // 795 saves 5 below 800 (under 1% of 800) for 1.9 more FLOPs; 785 saves
  // 15 below 800, and is kept; 781 saves 4 below 785 for 0.5 more, within
  // the FLOPs taken as noise, and is kept too.
  const std::vector<FrontierPoint> points = {
      {0, 800, 0.1}, {0, 795, 2.0}, {0, 785, 3.0}, {0, 781, 3.5}};
  FrontierRules rules;
  rules.flops_within_noise = 1.0;
  EXPECT_EQ(UsablePoints(points, kFrontierStartBytes, rules),
            (std::vector<int>{0, 2, 3}));
  // Without that noise, 781 is no plan either: below every usable point,
  // the budget gets 785.
  EXPECT_EQ(UsablePoints(points, kFrontierStartBytes, FrontierRules()),
            (std::vector<int>{0, 2}));
  EXPECT_EQ(ChooseFromFrontier(points, 700, kFrontierStartBytes, Rules()), 2);
}

TEST(UsablePointsTest, NoiseTakenAsEqualDoesNotAddUpStepByStep) {
  // InceptionV3's CPU step (share of the allocation x 10^4, extra FLOPs in
  // % of the step): 6106 at +17.44, then 6105.9 at +18.33 and 6102 at
  // +18.64, each within 1% of the FLOPs of the point before it; the last
  // lowers the first by 0.07% for 1.2% more.
  const std::vector<FrontierPoint> points = {{0, 63060, 0.32},
                                             {0, 61060, 17.44},
                                             {0, 61059, 18.33},
                                             {0, 61020, 18.64}};
  constexpr int64_t kStart = 65100;
  FrontierRules rules;
  rules.flops_within_noise = 1.0;
  EXPECT_EQ(UsablePoints(points, kStart, rules), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ChooseFromFrontier(points, 50000, kStart, rules), 2);
}

TEST(UsablePointsTest, NoiseBetweenPlansIsAShareOfTheirPeakNotOfTheStart) {
  // DenseNet-121's step at batch 1462 for a100_sxm_40 (GB, extra FLOPs in
  // % of the step): it starts at 124.7; 40.68 at +3.9% misses the 40.02
  // budget, 39.68 at +5.3% meets it. 1.0 lower is under 1% of the start
  // but 2.5% of 40.68: a plan, and the budget is met.
  const std::vector<FrontierPoint> points = {
      {0, 74810, 0.18}, {0, 49832, 1.11}, {0, 40680, 3.89}, {0, 39678, 5.29}};
  constexpr int64_t kStart = 124726;
  EXPECT_EQ(UsablePoints(points, kStart, FrontierRules()),
            (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ChooseFromFrontier(points, 40021, kStart, Rules()), 3);
  // Within 1% of the cheaper plan's peak it is noise bought with FLOPs.
  const std::vector<FrontierPoint> near = {{0, 40680, 3.89}, {0, 40400, 5.29}};
  EXPECT_EQ(UsablePoints(near, kStart, FrontierRules()), (std::vector<int>{0}));
}

TEST(NonDominatedTest, ByPeakAscendingEachCheaperThanTheLower) {
  std::vector<FrontierPoint> points = {{0, 800, 1.0},  {0, 520, 5.0},
                                       {0, 600, 6.0},  {0, 470, 30.0},
                                       {0, 470, 40.0}, {0, 300, 1.0}};
  points[5].kept = false;
  EXPECT_EQ(NonDominated(points), (std::vector<int>{3, 1, 0}));
}

// The promises of plan_frontier.h, on random point sets and every budget,
// with FLOPs taken as noise and without.
TEST(ChooseFromFrontierTest, PromisesHoldForEveryPointSet) {
  std::mt19937 random(7);
  FrontierRules rules;
  for (int trial = 0; trial < 1000; ++trial) {
    rules.flops_within_noise = trial % 2 == 0 ? 0.0 : 5.0;
    std::vector<FrontierPoint> points;
    const int size = 1 + random() % 8;
    for (int i = 0; i < size; ++i) {
      FrontierPoint point;
      point.peak_bytes = 200 + random() % 900;
      point.extra_flops = random() % 50;
      point.kept = random() % 5 != 0;
      points.push_back(point);
    }
    Answer looser = AnswerFor(points, kFrontierStartBytes + 1, rules);
    for (int64_t budget = kFrontierStartBytes; budget > 100; --budget) {
      const Answer tighter = AnswerFor(points, budget, rules);
      ASSERT_LE(tighter.peak, looser.peak)
          << "trial " << trial << " " << budget;
      bool reachable = false;
      for (int i : UsablePoints(points, kFrontierStartBytes, rules)) {
        reachable |= points[i].peak_bytes <= budget;
      }
      if (reachable) ASSERT_LE(tighter.peak, budget);
      // A met budget never spends more than a tighter budget's plan.
      if (looser.peak <= budget + 1) ASSERT_LE(looser.flops, tighter.flops);
      looser = tighter;
    }
  }
}

}  // namespace
}  // namespace remat
}  // namespace xla
