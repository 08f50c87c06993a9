#include "xla/service/remat/move_log.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/remat_test_util.h"

namespace xla {
namespace remat {
namespace {

constexpr char kMoveLogModule[] = R"(
HloModule log

ENTRY e {
  p0 = f32[16] parameter(0)
  a = f32[16] exponential(p0)
  clone = f32[16] exponential(p0)
  cast = f32[4,4] bitcast(clone)
  ROOT r = f32[16] add(a, clone)
}
)";

class MoveLogTest : public RematHloTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ParseModule(kMoveLogModule));
    log_.Reset(/*slot_count=*/5);
  }

  MoveLog log_;
};

TEST_F(MoveLogTest, PlacedInstructionsBelongToTheCurrentMove) {
  AppliedMove& move = log_.Begin();
  log_.Place(Named("clone"), 3);
  log_.End();
  EXPECT_EQ(log_.current(), nullptr);
  ASSERT_EQ(log_.size(), 1);
  ASSERT_EQ(move.new_instructions.size(), 1);
  ASSERT_EQ(log_.PlacedAt(3).size(), 1);
  EXPECT_EQ(log_.PlacedAt(3)[0], Named("clone"));
  EXPECT_TRUE(log_.PlacedAt(2).empty());
}

TEST_F(MoveLogTest, AMoveTakenBackLeavesItsInstructionsOutOfThePlan) {
  log_.Begin().cost = 2;
  log_.Place(Named("clone"), 3);
  log_.Place(Named("cast"), 3);
  log_.RememberBitcast(Named("clone"), "f32[4,4]", 3, Named("cast"));
  log_.End();
  log_.Begin().cost = 5;
  log_.End();
  EXPECT_EQ(log_.KeptCost(), 7);
  EXPECT_EQ(log_.MarkTakenBack(0).size(), 2);
  EXPECT_TRUE(log_[0].undone);
  EXPECT_EQ(log_.KeptCost(), 5);
  EXPECT_TRUE(log_.HasKept());
  EXPECT_EQ(log_.FindBitcast(Named("clone"), "f32[4,4]", 3), nullptr);
  EXPECT_TRUE(log_.taken_back().contains(Named("clone")));
  EXPECT_EQ(log_.TakenBackPresent().size(), 2);
  log_.MarkDropped({Named("cast")});
  EXPECT_EQ(log_.TakenBackPresent().size(), 1);
}

TEST_F(MoveLogTest, EveryMoveMadeOrTakenBackIsANewRevision) {
  const int64_t start = log_.revision();
  log_.Begin();
  log_.End();
  const int64_t one_move = log_.revision();
  EXPECT_NE(one_move, start);
  log_.MarkTakenBack(0);
  EXPECT_NE(log_.revision(), one_move);
  EXPECT_NE(log_.revision(), start);
  const int64_t before_reset = log_.revision();
  log_.Reset(/*slot_count=*/5);
  EXPECT_GT(log_.revision(), before_reset);
}

TEST_F(MoveLogTest, KeptFlopsCountOnlyMovesNotTakenBack) {
  log_.Begin().flops = 10;
  log_.End();
  log_.Begin().flops = 32;
  log_.End();
  log_.MarkTakenBack(1);
  EXPECT_EQ(log_.KeptFlops(), 10);
  log_.MarkTakenBack(0);
  EXPECT_FALSE(log_.HasKept());
  log_.Clear();
  EXPECT_EQ(log_.size(), 0);
}

}  // namespace
}  // namespace remat
}  // namespace xla
