#include "xla/service/remat/planner_scoring.h"

#include <gtest/gtest.h>

#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/planner_test_util.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/remat_test_util.h"

namespace xla {
namespace remat {
namespace {

class PlannerScoringTest : public PlannerStateTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Build(kLateUse, /*chains=*/false, /*at=*/3));
  }
};

TEST_F(PlannerScoringTest, AValueWaitingForALaterUseIsMovableUntilThatUse) {
  int first_late = -1;
  int horizon = state_->slot_count();
  ScoreReads reads;
  EXPECT_TRUE(Movable(*state_, Index("a"), 3, first_late, horizon, reads));
  EXPECT_EQ(first_late, 6);
  // The answer holds until the sweep reaches the use.
  EXPECT_EQ(horizon, 6);
  ASSERT_EQ(reads.values.size(), 1);
  EXPECT_EQ(reads.values[0], Index("a"));
}

TEST_F(PlannerScoringTest, AValueReadAtTheSlotIsNotMovableThere) {
  int first_late = -1;
  int horizon = state_->slot_count();
  ScoreReads reads;
  EXPECT_FALSE(Movable(*state_, Index("a"), 2, first_late, horizon, reads));
  EXPECT_EQ(horizon, 3);  // asked again at the next slot
}

TEST_F(PlannerScoringTest, AValueNotYetDefinedIsNotMovable) {
  int first_late = -1;
  int horizon = state_->slot_count();
  ScoreReads reads;
  EXPECT_FALSE(Movable(*state_, Index("c"), 3, first_late, horizon, reads));
  EXPECT_EQ(horizon, 4);
}

TEST_F(PlannerScoringTest, PlainBytesHaveNoCompactForm) {
  Candidate candidate;
  int horizon = state_->slot_count();
  ScoreReads reads;
  EXPECT_FALSE(
      EvaluateCompress(*state_, Index("a"), 3, candidate, horizon, reads));
}

TEST_F(PlannerScoringTest, AnOperandWithOneVersionIsReadAsItIs) {
  HloInstruction* p = Named("p");
  EXPECT_EQ(ChooseOperand(*state_, p, 6), p);
}

TEST_F(PlannerScoringTest, AScoreIsReusedUntilItsHorizon) {
  ScoreCache cache;
  ASSERT_TRUE(Score(*state_, Index("a"), 3, cache));
  ASSERT_EQ(cache.candidates.size(), 1);
  EXPECT_EQ(cache.candidates[0].kind, MoveKind::kRecompute);
  EXPECT_EQ(cache.candidates[0].first_late, 6);
  EXPECT_FALSE(Score(*state_, Index("a"), 4, cache));  // still valid
  EXPECT_TRUE(Score(*state_, Index("a"), 6, cache));   // past the horizon
  EXPECT_TRUE(cache.candidates.empty());  // read at 6: not movable there
}

}  // namespace
}  // namespace remat
}  // namespace xla
