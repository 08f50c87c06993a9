#include "xla/service/remat/planner_edits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/testlib/pattern_matcher_gmock.h"
#include "xla/service/pattern_matcher.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/planner_scoring.h"
#include "xla/service/remat/planner_test_util.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {
namespace {

namespace m = ::xla::match;

// The recomputation of `a` scored at `kAt` on kLateUse.
class PlannerEditsTest : public PlannerStateTest {
 protected:
  static constexpr int kAt = 3;  // c: a, b and c are live

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Build(kLateUse, /*chains=*/false, kAt));
    a_ = Named("a");
    ASSERT_NE(a_, nullptr);
    const int index = state_->values().IndexOf(a_);
    ASSERT_GE(index, 0);
    ASSERT_NO_FATAL_FAILURE(
        ScoreRecompute(index, kAt, /*chains=*/false, candidate_));
  }

  const HloInstruction* Root() const {
    return module_->entry_computation()->root_instruction();
  }

  const HloInstruction* a_ = nullptr;
  Candidate candidate_;
};

TEST_F(PlannerEditsTest, TheScoredMoveRecomputesTheValueForItsLateUse) {
  EXPECT_EQ(candidate_.kind, MoveKind::kRecompute);
  EXPECT_EQ(candidate_.gain, kSquareValueBytes);
  EXPECT_GT(candidate_.flops, 0);
}

TEST_F(PlannerEditsTest, ApplyMoveClonesTheProducerAndRedirectsTheLateUse) {
  const int64_t before = state_->liveness().Max();
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  ASSERT_EQ(state_->moves().size(), 1);
  ASSERT_EQ(state_->result().decisions.size(), 1);
  EXPECT_EQ(state_->result().decisions.front().value, "a");
  EXPECT_EQ(before - state_->liveness().Max(), kSquareValueBytes);
  // The root now reads a clone of `a`, rebuilt from the parameter.
  const HloInstruction* clone = nullptr;
  EXPECT_THAT(Root(), GmockMatch(m::Add(m::Op().WithName("e"),
                                        m::Exp(&clone, m::Parameter(0)))));
  ASSERT_NE(clone, nullptr);
  EXPECT_NE(clone, a_);
  EXPECT_EQ(a_->user_count(), 1);  // b only
}

TEST_F(PlannerEditsTest, RevertMoveRestoresTheUsesAndTheLiveness) {
  const int64_t before = state_->liveness().Max();
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  ASSERT_TRUE(RevertMove(*state_, /*move_index=*/0).ok());
  EXPECT_TRUE(state_->moves()[0].undone);
  EXPECT_EQ(state_->liveness().Max(), before);
  EXPECT_THAT(Root(),
              GmockMatch(m::Add(m::Op().WithName("e"), m::Op().Is(a_))));
  EXPECT_EQ(a_->user_count(), 2);
}

// The judge's copy: the plan applied, scheduled and valid on its own, so
// that the platform's figure can be taken before the module is committed.
TEST_F(PlannerEditsTest, PlannedCopyCarriesThePlan) {
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  absl::StatusOr<std::unique_ptr<HloModule>> copy = PlannedCopy(*state_);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_NE(copy->get(), module_.get());
  EXPECT_EQ((*copy)->entry_computation()->instruction_count(), 8);
  EXPECT_TRUE((*copy)->schedule().Verify().ok());
  EXPECT_THAT((*copy)->entry_computation()->root_instruction(),
              GmockMatch(m::Add(m::Op(), m::Exp(m::Parameter(0)))));
}

// A copy leaves the module's schedule as the planner was given it, so a
// copy of the module made after the plan is taken back sees no clone.
TEST_F(PlannerEditsTest, ACopyLeavesTheModulesScheduleAsGiven) {
  const std::vector<HloInstruction*> given =
      module_->schedule().sequence(module_->entry_computation()).instructions();
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  ASSERT_TRUE(PlannedCopy(*state_).ok());
  EXPECT_EQ(
      module_->schedule().sequence(module_->entry_computation()).instructions(),
      given);
  ASSERT_TRUE(RevertMove(*state_, /*move_index=*/0).ok());
  ASSERT_TRUE(DropTakenBack(*state_).ok());
  EXPECT_TRUE(module_->schedule().Verify().ok());
}

TEST_F(PlannerEditsTest, MaterializeAppliesThePlanInScheduleOrder) {
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  absl::StatusOr<PlannerResult> result = Materialize(*state_);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->recomputed, 1);
  EXPECT_EQ(module_->entry_computation()->instruction_count(), 8);
  EXPECT_TRUE(module_->schedule().Verify().ok());
  // The clone runs after `e`, right before the root that reads it.
  const auto& order =
      module_->schedule().sequence(module_->entry_computation()).instructions();
  ASSERT_EQ(order.size(), 8);
  EXPECT_THAT(order[6], GmockMatch(m::Exp(m::Parameter(0))));
  EXPECT_EQ(order[7], Root());
}

TEST_F(PlannerEditsTest, AMoveTakenBackLeavesTheModuleAsGiven) {
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  ASSERT_TRUE(RevertMove(*state_, /*move_index=*/0).ok());
  ASSERT_TRUE(DropTakenBack(*state_).ok());
  absl::StatusOr<PlannerResult> result = Materialize(*state_);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->recomputed, 0);
  EXPECT_EQ(module_->entry_computation()->instruction_count(), 7);
  EXPECT_THAT(Root(),
              GmockMatch(m::Add(m::Op().WithName("e"), m::Op().Is(a_))));
  EXPECT_TRUE(module_->schedule().Verify().ok());
}

// `g` is read by `q` and `k`, which wait across the middle for `f` and the
// root. Recomputing `q` rebuilds `g`; the clone of `k` reads that clone of
// `g` at the same slot instead of holding `k` or a second `g`.
constexpr absl::string_view kSharedProducer = R"(
HloModule shared_producer, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  g = f32[256,256]{1,0} dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  q = f32[256,256]{1,0} negate(g)
  k = f32[256,256]{1,0} exponential(g)
  b = f32[256,256]{1,0} tanh(p)
  c = f32[256,256]{1,0} exponential(b)
  d = f32[256,256]{1,0} tanh(c)
  e = f32[256,256]{1,0} add(d, c)
  f = f32[256,256]{1,0} add(e, q)
  ROOT r = f32[256,256]{1,0} add(f, k)
})";

// The recomputation of `q` scored at `kAt` on kSharedProducer, with chains.
class CompanionTest : public PlannerStateTest {
 protected:
  static constexpr int kAt = 5;  // c: q, k, b and c are live, g is dead

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Build(kSharedProducer, /*chains=*/true, kAt));
    ASSERT_NO_FATAL_FAILURE(
        ScoreRecompute(Index("q"), kAt, /*chains=*/true, candidate_));
  }

  Candidate candidate_;
};

TEST_F(CompanionTest, TheChainsOtherReaderComesBackForItsOwnFlops) {
  ASSERT_EQ(candidate_.chain.size(), 2);
  EXPECT_EQ(candidate_.chain[0], Index("g"));
  ASSERT_EQ(candidate_.companions.size(), 1);
  EXPECT_EQ(candidate_.companions[0], Index("k"));
  EXPECT_EQ(candidate_.gain, 2 * kSquareValueBytes);
  const ValueTable& values = state_->values();
  EXPECT_DOUBLE_EQ(candidate_.flops, values[Index("g")].flops +
                                         values[Index("q")].flops +
                                         values[Index("k")].flops);
}

TEST_F(CompanionTest, OneCloneOfTheProducerServesBoth) {
  const int64_t before = state_->liveness().At(kAt);
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  EXPECT_EQ(before - state_->liveness().At(kAt), 2 * kSquareValueBytes);
  const HloInstruction* f = Named("f");
  const HloInstruction* g_for_q = nullptr;
  const HloInstruction* g_for_k = nullptr;
  EXPECT_THAT(f, GmockMatch(m::Add(
                     m::Op(), m::Negate(m::Dot(&g_for_q, m::Op(), m::Op())))));
  EXPECT_THAT(module_->entry_computation()->root_instruction(),
              GmockMatch(m::Add(m::Op().Is(f),
                                m::Exp(m::Dot(&g_for_k, m::Op(), m::Op())))));
  EXPECT_NE(g_for_q->name(), "g");
  EXPECT_EQ(g_for_q, g_for_k);
  absl::StatusOr<PlannerResult> result = Materialize(*state_);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->recomputed, 3);
  EXPECT_TRUE(module_->schedule().Verify().ok());
}

// Every reader of `q`, `k` and so of `g` reads a clone: the move sinks the
// three to the late uses, and the written module runs each once. Its extra
// FLOPs are none, and the originals go.
TEST_F(CompanionTest, RunsLeftWithoutAReaderAreNotExtraFlops) {
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  EXPECT_DOUBLE_EQ(state_->moves().KeptFlops(), candidate_.flops);
  EXPECT_DOUBLE_EQ(PlanExtraFlops(*state_), 0);
  absl::StatusOr<std::unique_ptr<HloModule>> copy = PlannedCopy(*state_);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(FindInstruction(**copy, "g"), nullptr);
  absl::StatusOr<PlannerResult> result = Materialize(*state_);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_DOUBLE_EQ(result->extra_flops, 0);
  EXPECT_EQ(result->instructions_removed, 3);
  for (absl::string_view name : {"g", "q", "k"}) {
    EXPECT_EQ(Named(name), nullptr) << name;
  }
  EXPECT_TRUE(module_->schedule().Verify().ok());
}

TEST_F(CompanionTest, RevertMoveGivesTheCompanionItsUsesBack) {
  const HloInstruction* k = Named("k");
  const int64_t before = state_->liveness().Max();
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  EXPECT_EQ(k->user_count(), 0);
  ASSERT_TRUE(RevertMove(*state_, /*move_index=*/0).ok());
  EXPECT_EQ(state_->liveness().Max(), before);
  EXPECT_EQ(k->user_count(), 1);
  EXPECT_FALSE(state_->values()[Index("k")].dead);
  EXPECT_EQ(state_->values()[Index("k")].uses.size(), 1);
}

// `u` and `v`, the two outputs of one fusion, both read late (at g and r).
constexpr absl::string_view kTwoOutputs = R"(
HloModule two_outputs, is_scheduled=true
fused_pair {
  x = f32[256,256]{1,0} parameter(0)
  ex = f32[256,256]{1,0} exponential(x)
  th = f32[256,256]{1,0} tanh(x)
  ROOT pair = (f32[256,256]{1,0}, f32[256,256]{1,0}) tuple(ex, th)
}
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  f = (f32[256,256]{1,0}, f32[256,256]{1,0}) fusion(p), kind=kLoop, calls=fused_pair
  u = f32[256,256]{1,0} get-tuple-element(f), index=0
  v = f32[256,256]{1,0} get-tuple-element(f), index=1
  b = f32[256,256]{1,0} add(u, v)
  c = f32[256,256]{1,0} exponential(b)
  d = f32[256,256]{1,0} tanh(c)
  g = f32[256,256]{1,0} add(d, u)
  ROOT r = f32[256,256]{1,0} add(g, v)
})";

// The recomputation of `u` scored at `kAt` on kTwoOutputs, for `path`
// (siblings on; the move itself is a single recomputation).
class SiblingTest : public PlannerStateTest {
 protected:
  static constexpr int kAt = 5;  // c: u and v are held for g and r

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(
        Build(kTwoOutputs, /*chains=*/true, kAt, /*siblings=*/true));
    ASSERT_NO_FATAL_FAILURE(
        ScoreRecompute(Index("u"), kAt, /*chains=*/false, candidate_));
  }

  Candidate candidate_;
};

TEST_F(SiblingTest, TheOtherOutputComesForNoFlops) {
  ASSERT_EQ(candidate_.siblings.size(), 1);
  EXPECT_EQ(candidate_.siblings[0], Index("v"));
  EXPECT_EQ(candidate_.gain, 2 * kSquareValueBytes);
  EXPECT_DOUBLE_EQ(candidate_.flops, state_->values()[Index("u")].flops);
}

TEST_F(SiblingTest, OneCloneServesBothOutputs) {
  const int64_t before = state_->liveness().At(kAt);
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  EXPECT_EQ(before - state_->liveness().At(kAt), 2 * kSquareValueBytes);
  const HloInstruction* for_g = nullptr;
  const HloInstruction* for_r = nullptr;
  EXPECT_THAT(
      Named("g"),
      GmockMatch(m::Add(m::Op(), m::GetTupleElement(m::Fusion(&for_g), 0))));
  EXPECT_THAT(
      module_->entry_computation()->root_instruction(),
      GmockMatch(m::Add(m::Op(), m::GetTupleElement(m::Fusion(&for_r), 1))));
  EXPECT_NE(for_g, Named("f"));
  EXPECT_EQ(for_g, for_r);
  absl::StatusOr<PlannerResult> result = Materialize(*state_);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->recomputed, 1);
  EXPECT_TRUE(module_->schedule().Verify().ok());
}

TEST_F(SiblingTest, StandardClonesOneElementAMove) {
  ASSERT_NO_FATAL_FAILURE(Build(kTwoOutputs, /*chains=*/false, kAt));
  Candidate plain;
  ASSERT_NO_FATAL_FAILURE(
      ScoreRecompute(Index("u"), kAt, /*chains=*/false, plain));
  EXPECT_TRUE(plain.siblings.empty());
  EXPECT_EQ(plain.gain, kSquareValueBytes);
}

TEST_F(SiblingTest, RevertMoveGivesTheSiblingItsUseBack) {
  const HloInstruction* v = Named("v");
  const int64_t before = state_->liveness().Max();
  ASSERT_TRUE(ApplyMove(*state_, candidate_, kAt).ok());
  EXPECT_EQ(v->user_count(), 1);  // b only
  ASSERT_TRUE(RevertMove(*state_, /*move_index=*/0).ok());
  EXPECT_EQ(state_->liveness().Max(), before);
  EXPECT_EQ(v->user_count(), 2);
  EXPECT_FALSE(state_->values()[Index("v")].dead);
  EXPECT_EQ(state_->values()[Index("v")].uses.size(), 2);
}

// `a` reads `p`, which the dynamic-update-slice `d` writes over in place
// before `a`'s late use at `r`: a clone there would read the new contents.
// Slots: p 0, u 1, i 2, a 3, b 4, c 5, d 6, e 7, r 8.
constexpr absl::string_view kOperandWrittenOver = R"(
HloModule operand_written_over, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  u = f32[8,256]{1,0} parameter(1)
  i = s32[] parameter(2)
  a = f32[256,256]{1,0} exponential(p)
  b = f32[256,256]{1,0} tanh(a)
  c = f32[256,256]{1,0} exponential(b)
  d = f32[256,256]{1,0} dynamic-update-slice(p, u, i, i)
  e = f32[256,256]{1,0} add(c, d)
  ROOT r = f32[256,256]{1,0} add(a, e)
})";

class WrittenOverTest : public PlannerStateTest {
 protected:
  static constexpr int kAt = 5;      // c
  static constexpr int kWriter = 6;  // d

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Build(kOperandWrittenOver, /*chains=*/false, kAt));
  }
};

TEST_F(WrittenOverTest, TheCloneRunsBeforeTheWriterAndStillFreesTheSlot) {
  Candidate candidate;
  ASSERT_NO_FATAL_FAILURE(
      ScoreRecompute(Index("a"), kAt, /*chains=*/false, candidate));
  EXPECT_EQ(candidate.first_late, kWriter);  // not r's slot, 8
  EXPECT_EQ(candidate.gain, kSquareValueBytes);
  ASSERT_TRUE(ApplyMove(*state_, candidate, kAt).ok());
  const HloInstruction* clone = nullptr;
  EXPECT_THAT(module_->entry_computation()->root_instruction(),
              GmockMatch(m::Add(m::Exp(&clone, m::Parameter(0)), m::Op())));
  ASSERT_NE(clone, nullptr);
  // Where the plan's schedule runs it: on the judge's copy.
  absl::StatusOr<std::unique_ptr<HloModule>> copy = PlannedCopy(*state_);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_TRUE((*copy)->schedule().Verify().ok());
  const auto& order =
      (*copy)->schedule().sequence((*copy)->entry_computation()).instructions();
  const auto position = [&](absl::string_view name) {
    return absl::c_find_if(order,
                           [&](const HloInstruction* instruction) {
                             return instruction->name() == name;
                           }) -
           order.begin();
  };
  EXPECT_LT(position(clone->name()), position("d"));
}

TEST_F(WrittenOverTest, AtTheWriterThereIsNoRoomLeft) {
  Candidate candidate;
  int horizon = state_->slot_count();
  ScoreReads reads;
  EXPECT_FALSE(EvaluateRecompute(*state_, Index("a"), kWriter,
                                 /*chains=*/false, candidate, horizon, reads));
}

}  // namespace
}  // namespace remat
}  // namespace xla
