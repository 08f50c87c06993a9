#include "xla/service/remat/fused_computation_recycler.h"

#include <gtest/gtest.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/hlo_verifier.h"
#include "xla/service/remat/remat_test_util.h"

namespace xla {
namespace remat {
namespace {

constexpr absl::string_view kFused = R"(
HloModule fused
body {
  x = f32[64]{0} parameter(0)
  ROOT e = f32[64]{0} exponential(x)
}
ENTRY main {
  p = f32[64]{0} parameter(0)
  f = f32[64]{0} fusion(p), kind=kLoop, calls=body
  ROOT t = f32[64]{0} tanh(f)
})";

class FusedComputationRecyclerTest : public RematHloTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ParseModule(kFused));
    entry_ = module_->entry_computation();
    fusion_ = entry_->root_instruction()->mutable_operand(0);
  }

  // A clone of `original` added to the entry, as PlaceClone adds one.
  HloInstruction* AddClone(const HloInstruction& original) {
    return entry_->AddInstruction(
        recycler_.Clone(original, module_.get(), "remat"));
  }

  bool Verifies() {
    HloVerifier verifier(/*layout_sensitive=*/false,
                         /*allow_mixed_precision=*/true);
    return verifier.Run(module_.get()).ok();
  }

  HloComputation* entry_ = nullptr;
  HloInstruction* fusion_ = nullptr;
  FusedComputationRecycler recycler_;
};

TEST_F(FusedComputationRecyclerTest, ARemovedClonesBodyServesTheNextClone) {
  HloInstruction* first = AddClone(*fusion_);
  HloComputation* body = first->fused_instructions_computation();
  EXPECT_NE(body, fusion_->fused_instructions_computation());
  EXPECT_EQ(module_->computation_count(), 3);

  ASSERT_TRUE(entry_->RemoveInstruction(first).ok());
  recycler_.Release(body);
  EXPECT_EQ(recycler_.spare_count(), 1);

  HloInstruction* second = AddClone(*fusion_);
  EXPECT_EQ(second->fused_instructions_computation(), body);
  EXPECT_EQ(module_->computation_count(), 3);  // no fresh copy
  EXPECT_EQ(recycler_.spare_count(), 0);
  EXPECT_EQ(body->FusionInstruction(), second);
  EXPECT_TRUE(Verifies());
}

TEST_F(FusedComputationRecyclerTest, EveryCopyNamesTheFirstOriginal) {
  HloInstruction* first = AddClone(*fusion_);
  HloInstruction* second = AddClone(*first);  // a clone of a clone
  const HloComputation* body = fusion_->fused_instructions_computation();
  EXPECT_EQ(recycler_.OriginalOf(first->fused_instructions_computation()),
            body);
  EXPECT_EQ(recycler_.OriginalOf(second->fused_instructions_computation()),
            body);
  EXPECT_EQ(recycler_.OriginalOf(body), nullptr);  // made by no recycler
}

TEST_F(FusedComputationRecyclerTest, SparesGoOutInTheOrderTheyWereMade) {
  // Clones come back in a hash set's order; which spare a clone takes must
  // not depend on it (its name is in the output).
  HloInstruction* first = AddClone(*fusion_);
  HloInstruction* second = AddClone(*fusion_);
  HloComputation* made_first = first->fused_instructions_computation();
  HloComputation* made_second = second->fused_instructions_computation();
  ASSERT_TRUE(entry_->RemoveInstruction(first).ok());
  ASSERT_TRUE(entry_->RemoveInstruction(second).ok());
  recycler_.Release(made_first);
  recycler_.Release(made_second);
  EXPECT_EQ(AddClone(*fusion_)->fused_instructions_computation(), made_first);
  EXPECT_EQ(AddClone(*fusion_)->fused_instructions_computation(), made_second);
}

TEST_F(FusedComputationRecyclerTest, AClonesCloneTakesTheOriginalsSpares) {
  HloInstruction* first = AddClone(*fusion_);
  HloInstruction* of_clone = AddClone(*first);
  HloComputation* spare = of_clone->fused_instructions_computation();
  ASSERT_TRUE(entry_->RemoveInstruction(of_clone).ok());
  recycler_.Release(spare);
  // A clone of the original fusion takes the spare made from a clone of it.
  EXPECT_EQ(AddClone(*fusion_)->fused_instructions_computation(), spare);
}

TEST_F(FusedComputationRecyclerTest, ABodyStillCalledOrNotACloneIsNotSpare) {
  HloInstruction* clone = AddClone(*fusion_);
  recycler_.Release(clone->fused_instructions_computation());    // still called
  recycler_.Release(fusion_->fused_instructions_computation());  // original
  EXPECT_EQ(recycler_.spare_count(), 0);
  // Other instructions are cloned as HloInstruction::Clone does.
  HloInstruction* tanh = AddClone(*entry_->root_instruction());
  EXPECT_EQ(tanh->opcode(), HloOpcode::kTanh);
  EXPECT_EQ(tanh->operand(0), fusion_);
}

}  // namespace
}  // namespace remat
}  // namespace xla
