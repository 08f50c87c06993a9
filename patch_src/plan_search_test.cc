#include "xla/service/remat/plan_search.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/planner.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/remat_planner_test_util.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {
namespace {

// kFan on a planner of `path`'s config (chains), aimed as low as it goes,
// judged by the tracker's start less what the plan recomputed past the top;
// `judged` counts the judgements.
class UnchainedPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(kFan);
    ASSERT_TRUE(module.ok()) << module.status();
    module_ = *std::move(module);
    absl::StatusOr<std::unique_ptr<RematCostAnalysis>> costs =
        AnalyzeCosts(*module_, PlainBytes);
    ASSERT_TRUE(costs.ok()) << costs.status();
    costs_ = *std::move(costs);
    config_.target_bytes = 1;
    config_.chains = true;
    config_.keep_plan = [this](
                            const HloModule& planned,
                            const AliasInfo*) -> absl::StatusOr<PlanVerdict> {
      ++judged_;
      return PlanVerdict{/*keep=*/true,
                         start_ - MovedPastTheTop(planned) * kSquareValueBytes,
                         ""};
    };
    planner_ =
        std::make_unique<Planner>(module_.get(), module_->entry_computation(),
                                  config_, PlainBytes, *costs_);
    ASSERT_TRUE(planner_->Init().ok());
    start_ = planner_->initial_peak();
  }

  std::unique_ptr<HloModule> module_;
  std::unique_ptr<RematCostAnalysis> costs_;
  PlannerConfig config_;
  std::unique_ptr<Planner> planner_;
  int64_t start_ = 0;
  int judged_ = 0;
};

// The plan of single recomputations says so on its point and in its
// recipe; a planner of `path`'s config makes it again from the recipe, and
// from the point alone, to the same plan.
TEST_F(UnchainedPlanTest, IsMadeAgainWithoutChains) {
  absl::StatusOr<std::optional<AimedPlan>> unchained = PlanUnchainedAt(
      *planner_, config_, 1, std::numeric_limits<int64_t>::max());
  ASSERT_TRUE(unchained.ok()) << unchained.status();
  ASSERT_TRUE(unchained->has_value());
  const AimedPlan& aimed = **unchained;
  EXPECT_FALSE(aimed.point.chains);
  EXPECT_TRUE(aimed.point.kept);
  EXPECT_LT(aimed.point.peak_bytes, start_);
  EXPECT_FALSE(aimed.recipe.chains);
  ASSERT_FALSE(aimed.recipe.steps.empty());
  for (const PlanStep& step : aimed.recipe.steps) {
    if (step.kind == PlanStepKind::kPlan) EXPECT_FALSE(step.chains);
  }

  absl::StatusOr<bool> replayed = planner_->Replay(aimed.recipe, config_);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_TRUE(*replayed);
  EXPECT_EQ(planner_->tracker_peak(), aimed.recipe.tracker_peak);
  EXPECT_EQ(planner_->kept_flops(), aimed.point.extra_flops);

  absl::StatusOr<AimedPlan> again =
      PlanPointAgain(*planner_, config_, aimed.point);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->point.chains);
  EXPECT_EQ(again->point.peak_bytes, aimed.point.peak_bytes);
  EXPECT_EQ(again->point.extra_flops, aimed.point.extra_flops);
}

// A sweep the tracker puts above the bound it is given is not judged.
TEST_F(UnchainedPlanTest, ASweepAboveItsBoundIsNotJudged) {
  absl::StatusOr<std::optional<AimedPlan>> unchained =
      PlanUnchainedAt(*planner_, config_, 1, /*judged_within=*/0);
  ASSERT_TRUE(unchained.ok()) << unchained.status();
  EXPECT_FALSE(unchained->has_value());
  EXPECT_EQ(judged_, 0);
}

}  // namespace
}  // namespace remat
}  // namespace xla
