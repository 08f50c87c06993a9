#include "xla/service/remat/move_peak_bound.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "absl/strings/string_view.h"
#include "xla/service/remat/planner_edits.h"
#include "xla/service/remat/planner_scoring.h"
#include "xla/service/remat/planner_test_util.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {
namespace {

constexpr int64_t kRow = 256 * 4;  // f32[256]

// `a` (4 rows) is read early by `e` and late by `g`; its operand `x` (one
// row) dies when `a` is made. `big` and `s` make the peak at `s` (25 rows:
// p, a, big, s), where `a` is still live. Recomputing `a` for `g` at the
// sweep's slot `f` frees 3 rows there, but holds `x` from its end to `g`:
// the peak becomes 26 rows.
constexpr absl::string_view kHeldAcrossThePeak = R"(
HloModule held_across_the_peak, is_scheduled=true
ENTRY main {
  p = f32[256]{0} parameter(0)
  x = f32[256]{0} exponential(p)
  a = f32[4,256]{1,0} broadcast(x), dimensions={1}
  big = f32[16,256]{1,0} broadcast(p), dimensions={1}
  s = f32[4,256]{1,0} slice(big), slice={[0:4], [0:256]}
  e = f32[4,256]{1,0} add(a, s)
  f = f32[4,256]{1,0} multiply(e, e)
  ROOT g = f32[4,256]{1,0} add(f, a)
})";

class MovePeakBoundTest : public PlannerStateTest {
 protected:
  static constexpr int kAt = 6;  // f

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Build(kHeldAcrossThePeak, /*chains=*/false, kAt));
    ASSERT_NO_FATAL_FAILURE(
        ScoreRecompute(Index("a"), kAt, /*chains=*/false, candidate_));
  }

  Candidate candidate_;
};

TEST_F(MovePeakBoundTest, TheMoveGainsAtItsSlot) {
  EXPECT_EQ(state_->liveness().Max(), 25 * kRow);
  EXPECT_EQ(candidate_.first_late, 7);
  EXPECT_EQ(candidate_.gain, 3 * kRow);
}

TEST_F(MovePeakBoundTest, AnOperandHeldAcrossThePeakSurelyRaisesIt) {
  const int64_t peak = state_->liveness().Max();
  EXPECT_TRUE(MoveSurelyRaisesPeak(*state_, candidate_, kAt, peak));
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  EXPECT_EQ(state_->liveness().Max(), 26 * kRow);
}

TEST_F(MovePeakBoundTest, AThresholdTheMoveStaysWithinIsNotRefused) {
  // Here the bound is the peak the move leaves, exactly.
  EXPECT_TRUE(MoveSurelyRaisesPeak(*state_, candidate_, kAt, 26 * kRow - 1));
  EXPECT_FALSE(MoveSurelyRaisesPeak(*state_, candidate_, kAt, 26 * kRow));
}

TEST_F(MovePeakBoundTest, TheBoundReadsTheStateWithoutChangingIt) {
  const int buffers = state_->liveness().buffer_count();
  const int instructions = module_->entry_computation()->instruction_count();
  MoveSurelyRaisesPeak(*state_, candidate_, kAt, 0);
  EXPECT_EQ(state_->liveness().buffer_count(), buffers);
  EXPECT_EQ(module_->entry_computation()->instruction_count(), instructions);
  EXPECT_EQ(state_->liveness().Max(), 25 * kRow);
}

TEST_F(MovePeakBoundTest, MovesItDoesNotModelAreNeverRefused) {
  Candidate compress = candidate_;
  compress.kind = MoveKind::kCompress;
  EXPECT_FALSE(MoveSurelyRaisesPeak(*state_, compress, kAt, 0));
  Candidate reads_placed = candidate_;
  reads_placed.reads_placed.push_back(Index("x"));
  EXPECT_FALSE(MoveSurelyRaisesPeak(*state_, reads_placed, kAt, 0));
}

}  // namespace
}  // namespace remat
}  // namespace xla
