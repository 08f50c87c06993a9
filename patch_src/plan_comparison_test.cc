#include "xla/service/remat/plan_comparison.h"

#include <gtest/gtest.h>

namespace xla {
namespace remat {
namespace {

constexpr int64_t kBudget = 100;
constexpr int64_t kStart = 1000;

JudgedPlan Judged(int64_t peak, double flops, bool keep = true) {
  return JudgedPlan{PlanVerdict{keep, peak, keep ? "" : "refused"}, flops};
}

PlanComparison AtTheBudget() {
  return PlanComparison{kBudget, kStart, /*out_of_line_factor=*/8};
}

TEST(PlanComparisonTest, WithinTheBudgetTheCheaperWins) {
  EXPECT_TRUE(AtTheBudget().FirstIsBetter(Judged(90, 10), Judged(50, 20)));
  EXPECT_FALSE(AtTheBudget().FirstIsBetter(Judged(50, 20), Judged(90, 10)));
}

TEST(PlanComparisonTest, APlanWithinTheBudgetBeatsOneOverIt) {
  EXPECT_TRUE(AtTheBudget().FirstIsBetter(Judged(100, 1e9), Judged(101, 0)));
}

TEST(PlanComparisonTest, ARefusedPlanNeverWins) {
  EXPECT_FALSE(AtTheBudget().FirstIsBetter(Judged(10, 0, /*keep=*/false),
                                           Judged(900, 5)));
  EXPECT_TRUE(AtTheBudget().FirstIsBetter(Judged(900, 5),
                                          Judged(10, 0, /*keep=*/false)));
}

// Both over the budget: the cheaper plan saves 500 bytes for 500 FLOPs, one
// FLOP a byte. The lower one pays 100 FLOPs for its 10 bytes more: 10 a
// byte, past 8 times the cheaper plan's rate.
TEST(PlanComparisonTest, OverTheBudgetALowerPlanBoughtDearlyLoses) {
  const JudgedPlan cheaper = Judged(500, 500);
  const JudgedPlan lower = Judged(490, 600);
  EXPECT_TRUE(AtTheBudget().BoughtDearly(lower, cheaper));
  EXPECT_FALSE(AtTheBudget().FirstIsBetter(lower, cheaper));
  EXPECT_TRUE(AtTheBudget().FirstIsBetter(cheaper, lower));
}

// At 7 FLOPs a byte it is in line: the lower plan wins, as it would without
// the rule.
TEST(PlanComparisonTest, OverTheBudgetALowerPlanInLineWins) {
  const JudgedPlan cheaper = Judged(500, 500);
  const JudgedPlan lower = Judged(490, 570);
  EXPECT_FALSE(AtTheBudget().BoughtDearly(lower, cheaper));
  EXPECT_TRUE(AtTheBudget().FirstIsBetter(lower, cheaper));
  EXPECT_FALSE(AtTheBudget().FirstIsBetter(cheaper, lower));
}

TEST(PlanComparisonTest, AFactorOfZeroIsNoRule) {
  const PlanComparison no_rule{kBudget, kStart, /*out_of_line_factor=*/0};
  EXPECT_TRUE(no_rule.FirstIsBetter(Judged(490, 600), Judged(500, 500)));
}

TEST(PlanComparisonTest, ALowerPlanThatMeetsTheBudgetIsNeverBoughtDearly) {
  const JudgedPlan cheaper = Judged(500, 500);
  const JudgedPlan within = Judged(100, 1e9);
  EXPECT_FALSE(AtTheBudget().BoughtDearly(within, cheaper));
  EXPECT_TRUE(AtTheBudget().FirstIsBetter(within, cheaper));
}

// A cheaper plan that saved nothing has no rate to compare with.
TEST(PlanComparisonTest, ACheaperPlanThatSavedNothingSetsNoRate) {
  EXPECT_FALSE(AtTheBudget().BoughtDearly(Judged(900, 1e6), Judged(kStart, 0)));
}

}  // namespace
}  // namespace remat
}  // namespace xla
