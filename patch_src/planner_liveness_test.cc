#include "xla/service/remat/planner_liveness.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace xla {
namespace remat {
namespace {

// Positions 0..5; buffer 0 (8 bytes) defined at 1 and read at 3, so live on
// [1, 3]; the profile holds exactly its bytes.
class LivenessModelTest : public ::testing::Test {
 protected:
  LivenessModelTest() : model_(6) {
    b_ = model_.AddBuffer(/*size=*/8, /*def=*/1, /*end=*/3,
                          /*live_to_end=*/false);
    model_.SeedRead(b_, 3);
    model_.SetProfile({0, 8, 8, 8, 0, 0});
  }

  std::vector<int64_t> Profile() const {
    std::vector<int64_t> out;
    for (int p = 0; p < model_.positions(); ++p) out.push_back(model_.At(p));
    return out;
  }

  LivenessModel model_;
  int b_ = -1;
};

TEST_F(LivenessModelTest, LaterReadExtendsEndAndProfile) {
  model_.AddRead(b_, 5);
  EXPECT_EQ(model_.End(b_), 5);
  EXPECT_EQ(Profile(), (std::vector<int64_t>{0, 8, 8, 8, 8, 8}));
  EXPECT_EQ(model_.Max(), 8);
}

TEST_F(LivenessModelTest, RemovingLastReadShortensToThePreviousOne) {
  model_.AddRead(b_, 2);
  model_.RemoveRead(b_, 3);
  EXPECT_EQ(model_.End(b_), 2);
  EXPECT_EQ(Profile(), (std::vector<int64_t>{0, 8, 8, 0, 0, 0}));
  // No read left: the buffer lives at its definition only.
  model_.RemoveRead(b_, 2);
  EXPECT_EQ(model_.End(b_), 1);
  EXPECT_EQ(Profile(), (std::vector<int64_t>{0, 8, 0, 0, 0, 0}));
}

TEST_F(LivenessModelTest, ReadsAreAMultiset) {
  model_.AddRead(b_, 4);
  model_.AddRead(b_, 4);
  model_.RemoveRead(b_, 4);
  EXPECT_EQ(model_.End(b_), 4);  // one read at 4 is left
  model_.RemoveRead(b_, 4);
  EXPECT_EQ(model_.End(b_), 3);
  model_.RemoveRead(b_, 4);  // none left: no-op
  EXPECT_EQ(model_.End(b_), 3);
}

TEST_F(LivenessModelTest, UndoRestoresExactly) {
  const std::vector<int64_t> profile_before = Profile();
  LivenessUndo undo;
  model_.BeginMove(/*move=*/0, &undo);
  const int clone = model_.AddBuffer(/*size=*/4, /*def=*/4, /*end=*/4,
                                     /*live_to_end=*/false);
  model_.AddMemory(4, 4, 4);
  model_.AddRead(clone, 5);
  model_.AddRead(b_, 4);
  model_.RemoveRead(b_, 3);
  model_.Free(b_);
  model_.EndMove();
  EXPECT_EQ(Profile(), (std::vector<int64_t>{0, 8, 8, 8, 12, 4}));
  EXPECT_TRUE(model_.buffer(b_).freed);
  EXPECT_EQ(model_.buffer(b_).touched_by, 0);
  EXPECT_EQ(model_.buffer(clone).touched_by, 0);
  EXPECT_TRUE(model_.Undoable(undo, 0));
  EXPECT_EQ(model_.PeakWithout(undo), 8);
  EXPECT_EQ(Profile(), (std::vector<int64_t>{0, 8, 8, 8, 12, 4}));

  model_.Revert(undo);
  EXPECT_EQ(Profile(), profile_before);
  const PlannerBuffer& buffer = model_.buffer(b_);
  EXPECT_EQ(buffer.end, 3);
  EXPECT_EQ(buffer.reads, (std::multiset<int>{3}));
  EXPECT_FALSE(buffer.freed);
  EXPECT_EQ(buffer.touched_by, -1);
}

TEST_F(LivenessModelTest, LaterMoveTouchingABufferBlocksUndoAlone) {
  LivenessUndo first, second;
  model_.BeginMove(0, &first);
  model_.AddRead(b_, 4);
  model_.EndMove();
  model_.BeginMove(1, &second);
  model_.AddRead(b_, 5);
  model_.EndMove();
  EXPECT_FALSE(model_.Undoable(first, 0));
  EXPECT_TRUE(model_.Undoable(second, 1));
  model_.Revert(second);
  EXPECT_TRUE(model_.Undoable(first, 0));
  EXPECT_EQ(model_.End(b_), 4);
}

TEST_F(LivenessModelTest, LiveToEndAndFreedBuffersIgnoreReads) {
  const int out = model_.AddBuffer(/*size=*/2, /*def=*/2, /*end=*/5,
                                   /*live_to_end=*/true);
  model_.AddRead(out, 3);
  model_.RemoveRead(out, 5);
  EXPECT_EQ(model_.End(out), 5);
  EXPECT_TRUE(model_.buffer(out).reads.empty());

  model_.Free(b_);
  model_.AddRead(b_, 5);
  model_.RemoveRead(b_, 3);
  EXPECT_EQ(model_.End(b_), 3);
  EXPECT_EQ(model_.buffer(b_).reads, (std::multiset<int>{3}));
  EXPECT_EQ(Profile(), (std::vector<int64_t>{0, 8, 8, 8, 0, 0}));
}

TEST_F(LivenessModelTest, EarliestOverwriteWins) {
  EXPECT_EQ(model_.buffer(b_).overwritten_at, 6);
  model_.MarkOverwritten(b_, 4, nullptr);
  model_.MarkOverwritten(b_, 5, nullptr);
  EXPECT_EQ(model_.buffer(b_).overwritten_at, 4);
}

}  // namespace
}  // namespace remat
}  // namespace xla
