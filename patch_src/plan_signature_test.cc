#include "xla/service/remat/plan_signature.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_replace.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/planner_edits.h"
#include "xla/service/remat/planner_scoring.h"
#include "xla/service/remat/planner_test_util.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/remat_test_util.h"

namespace xla {
namespace remat {
namespace {

// kLateUse with `a` a fusion: its clones call copies of `fused_exp`.
std::string FusedLateUse() {
  return absl::StrReplaceAll(
      kLateUse, {{"ENTRY main {",
                  "fused_exp {\n"
                  "  x = f32[256,256]{1,0} parameter(0)\n"
                  "  ROOT e = f32[256,256]{1,0} exponential(x)\n"
                  "}\n"
                  "ENTRY main {"},
                 {"exponential(p)", "fusion(p), kind=kLoop, calls=fused_exp"}});
}

// The recomputation of `a` for the root's late use, scored at `c`.
class PlanSignatureTest : public PlannerStateTest,
                          public ::testing::WithParamInterface<bool> {
 protected:
  static constexpr int kAt = 3;

  void SetUp() override {
    const std::string hlo = GetParam() ? FusedLateUse() : std::string(kLateUse);
    ASSERT_NO_FATAL_FAILURE(Build(hlo, /*chains=*/false, kAt));
    ASSERT_NO_FATAL_FAILURE(
        ScoreRecompute(Index("a"), kAt, /*chains=*/false, candidate_));
  }

  std::string Signature() const {
    return PlanSignature(*state_, ComputeFinalOrder(*state_));
  }

  // The instruction the root reads in place of `a`.
  const HloInstruction* LateRead() const {
    return module_->entry_computation()->root_instruction()->operand(1);
  }

  Candidate candidate_;
};

TEST_P(PlanSignatureTest, ThePlanMadeAgainIsKnownDespiteNewNames) {
  const std::string none = Signature();
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  const std::string first = Signature();
  const std::string first_clone(LateRead()->name());
  EXPECT_NE(first, none);

  ASSERT_TRUE(RevertMove(*state_, /*move_index=*/0).ok());
  ASSERT_TRUE(DropTakenBack(*state_).ok());
  EXPECT_EQ(Signature(), none);

  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  EXPECT_NE(LateRead()->name(), first_clone);  // a new clone
  EXPECT_EQ(Signature(), first);
}

TEST_P(PlanSignatureTest, AnyEditOfTheGraphChangesIt) {
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  const std::string planned = Signature();
  HloInstruction* root = module_->entry_computation()->root_instruction();
  HloInstruction* clone = root->mutable_operand(1);
  // Another operand read.
  ASSERT_TRUE(root->ReplaceOperandWith(1, Named("d")).ok());
  EXPECT_NE(Signature(), planned);
  ASSERT_TRUE(root->ReplaceOperandWith(1, clone).ok());
  EXPECT_EQ(Signature(), planned);
  // An order the copy must keep.
  ASSERT_TRUE(Named("d")->AddControlDependencyTo(clone).ok());
  EXPECT_NE(Signature(), planned);
}

INSTANTIATE_TEST_SUITE_P(PlainAndFused, PlanSignatureTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Fusion" : "Plain";
                         });

}  // namespace
}  // namespace remat
}  // namespace xla
