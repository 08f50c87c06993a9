#include "xla/service/remat/planner_scoring.h"

#include <gtest/gtest.h>

#include "absl/algorithm/container.h"
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

// `v` reads `x` and `y`, both last read by it: a clone of `v` at the root
// would hold `x` across the middle, as many bytes as `v` frees.
constexpr absl::string_view kOutweighed = R"(
HloModule outweighed, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  x = f32[256,256]{1,0} exponential(p)
  y = f32[256,256]{1,0} tanh(p)
  v = f32[256,256]{1,0} add(x, y)
  m1 = f32[256,256]{1,0} exponential(p)
  m2 = f32[256,256]{1,0} tanh(m1)
  ROOT r = f32[256,256]{1,0} add(m2, v)
})";

// Scores `v`'s recomputation, which finds no candidate, and says what it
// read.
class OutweighedTest : public PlannerStateTest {
 protected:
  ScoreReads ReadsOfNoCandidate(int slot, bool chains, int& horizon) {
    Candidate candidate;
    horizon = state_->slot_count();
    ScoreReads reads;
    EXPECT_FALSE(EvaluateRecompute(*state_, Index("v"), slot, chains, candidate,
                                   horizon, reads));
    return reads;
  }
  bool Read(const ScoreReads& reads, absl::string_view name) const {
    return absl::c_linear_search(reads.values, Index(name));
  }
};

// A fusion of a deep residual stream reads dozens of activations: once those
// held across outweigh the value, the rest cannot make the move pay, and
// reading them would only make the score stale more often.
TEST_F(OutweighedTest, TheOperandsAfterOneThatOutweighsTheValueAreNotRead) {
  ASSERT_NO_FATAL_FAILURE(Build(kOutweighed, /*chains=*/false, /*at=*/5));
  int horizon = 0;
  const ScoreReads reads = ReadsOfNoCandidate(5, /*chains=*/false, horizon);
  EXPECT_TRUE(Read(reads, "x"));
  EXPECT_FALSE(Read(reads, "y"));
  // The answer holds until the use, whatever happens to `y`.
  EXPECT_EQ(horizon, 6);
}

// `v`'s chain would clone `w`, which reads `a` last (an articulation point:
// its parameter has no other reader, so it is held across, not cloned) and
// `b`.
constexpr absl::string_view kOutweighedLink = R"(
HloModule outweighed_link, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  q = f32[256,256]{1,0} parameter(1)
  a = f32[256,256]{1,0} exponential(q)
  z = f32[256,256]{1,0} negate(a)
  b = f32[256,256]{1,0} tanh(p)
  w = f32[256,256]{1,0} add(a, b)
  y = f32[256,256]{1,0} add(z, p)
  v = f32[256,256]{1,0} add(w, y)
  m1 = f32[256,256]{1,0} exponential(p)
  m2 = f32[256,256]{1,0} tanh(m1)
  ROOT r = f32[256,256]{1,0} add(m2, v)
})";

// Cloning `w` holds `a` across, as many bytes as `v` frees; not cloning it
// holds `w` itself: either way the move gains nothing, so neither `w`'s other
// operand nor `v`'s is read.
TEST_F(OutweighedTest, ALinkSureToOutweighTheValueEndsTheSearch) {
  ASSERT_NO_FATAL_FAILURE(Build(kOutweighedLink, /*chains=*/true, /*at=*/9));
  ASSERT_TRUE(state_->IsArticulation(Named("a")));
  ASSERT_FALSE(state_->IsArticulation(Named("w")));
  int horizon = 0;
  const ScoreReads reads = ReadsOfNoCandidate(9, /*chains=*/true, horizon);
  EXPECT_TRUE(Read(reads, "a"));
  EXPECT_FALSE(Read(reads, "b"));
  EXPECT_FALSE(Read(reads, "y"));
}

}  // namespace
}  // namespace remat
}  // namespace xla
