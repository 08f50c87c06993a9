#include "xla/service/remat/optimal_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/testlib/pattern_matcher_gmock.h"
#include "xla/service/pattern_matcher.h"
#include "xla/service/remat/milp_solver.h"
#include "xla/service/remat/planner_test_util.h"
#include "xla/service/remat/remat_test_util.h"

namespace xla {
namespace remat {
namespace {

namespace m = ::xla::match;

constexpr double kNoCap = -1;

// kLateUse: `a` is read by b at once and by the root at the end; holding it
// across c, d and e is what recomputing it saves.
class OptimalPlanTest : public PlannerStateTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Build(kLateUse, /*chains=*/false, /*at=*/0));
    absl::StatusOr<std::unique_ptr<OptimalProblem>> problem =
        OptimalProblem::Build(*state_, /*depth=*/1);
    ASSERT_TRUE(problem.ok()) << problem.status();
    problem_ = std::move(*problem);
    // With a budget no plan needs, the optimum is to recompute nothing.
    OptimalSolve unconstrained = Solve(int64_t{1} << 40);
    ASSERT_EQ(unconstrained.status, MilpStatus::kOptimal);
    EXPECT_TRUE(unconstrained.plan.empty());
    EXPECT_EQ(unconstrained.model_extra_flops, 0);
    peak_ = unconstrained.model_peak;
  }

  OptimalSolve Solve(int64_t target, double cap = kNoCap) {
    absl::StatusOr<OptimalSolve> solve =
        problem_->Solve(target, cap, MilpSolveOptions(), {});
    EXPECT_TRUE(solve.ok()) << solve.status();
    return solve.ok() ? *solve : OptimalSolve();
  }

  const HloInstruction* Root() const {
    return module_->entry_computation()->root_instruction();
  }

  std::unique_ptr<OptimalProblem> problem_;
  int64_t peak_ = 0;
};

// The peak is at e, where p, a, c, d and e are live: one value less needs
// `a` dropped there and rebuilt for the root. (The optimum may also rebuild
// d before e, which the cost model counts as no FLOPs: the model breaks no
// ties between plans of equal FLOPs.)
TEST_F(OptimalPlanTest, OneValueLessRecomputesTheLateUsesProducer) {
  const OptimalSolve solve = Solve(peak_ - kSquareValueBytes);
  ASSERT_EQ(solve.status, MilpStatus::kOptimal);
  ASSERT_FALSE(solve.plan.empty());
  EXPECT_LE(solve.model_peak, peak_ - kSquareValueBytes);
  EXPECT_GT(solve.model_extra_flops, 0);
  EXPECT_GT(solve.columns, 0);
  EXPECT_GT(solve.rows, 0);

  ASSERT_TRUE(problem_->Apply(*state_, solve).ok());
  EXPECT_EQ(state_->moves().size(), solve.plan.size());
  // The root reads a clone of `a`, rebuilt from the parameter.
  const HloInstruction* clone = nullptr;
  EXPECT_THAT(Root(), GmockMatch(m::Add(m::Op().WithName("e"),
                                        m::Exp(&clone, m::Parameter(0)))));
  ASSERT_NE(clone, nullptr);
  EXPECT_NE(clone->name(), "a");
}

TEST_F(OptimalPlanTest, TheAppliedPlanIsTheStartOfTheSameSolve) {
  const OptimalSolve solve = Solve(peak_ - kSquareValueBytes);
  ASSERT_FALSE(solve.plan.empty());
  ASSERT_TRUE(problem_->Apply(*state_, solve).ok());
  const CopiesInHand copies = CopiesOfPlanInHand(*state_);
  const HloInstruction* a = Named("a");
  ASSERT_TRUE(copies.contains(a));
  // One copy of `a` rebuilt, for the root (the schedule's last stage).
  EXPECT_THAT(copies.at(a).recomputed_at,
              ::testing::ElementsAre(state_->slot_count() - 1));
  // The plan in hand, read back as a solution, is one the model accepts:
  // the solver started from it finds the same least FLOPs.
  const std::vector<double> start = problem_->StartFrom(copies);
  EXPECT_EQ(start.size(), problem_->columns());
  absl::StatusOr<OptimalSolve> again = problem_->Solve(
      peak_ - kSquareValueBytes, kNoCap, MilpSolveOptions(), start);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->status, MilpStatus::kOptimal);
  EXPECT_DOUBLE_EQ(again->model_extra_flops, solve.model_extra_flops);
}

TEST_F(OptimalPlanTest, BelowWhatAnyPlanReachesIsInfeasibleAndChangesNothing) {
  // Two values must be live at once wherever an add runs.
  const OptimalSolve solve = Solve(kSquareValueBytes);
  EXPECT_EQ(solve.status, MilpStatus::kInfeasible);
  EXPECT_TRUE(solve.plan.empty());
  ASSERT_TRUE(problem_->Apply(*state_, solve).ok());
  EXPECT_EQ(state_->moves().size(), 0);
}

TEST_F(OptimalPlanTest, ACapBelowTheRecomputationsCostIsInfeasible) {
  const OptimalSolve solve = Solve(peak_ - kSquareValueBytes, /*cap=*/1);
  EXPECT_EQ(solve.status, MilpStatus::kInfeasible);
}

TEST_F(OptimalPlanTest, APlanOutsideTheModelIsRefusedNotApplied) {
  OptimalSolve outside;
  outside.plan = {Recomputation{/*node=*/1, /*stage=*/0}};
  const absl::Status status = problem_->Apply(*state_, outside);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(state_->moves().size(), 0);
}

}  // namespace
}  // namespace remat
}  // namespace xla
