#include "xla/service/remat/judging_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <thread>  // NOLINT(build/c++11): two lanes at once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/buffer_assignment.h"
#include "xla/service/remat/memory_figure.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_schedule.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/shape.h"
#include "xla/shape_util.h"

namespace xla {
namespace remat {
namespace {

// One fusion of each kind whose body the figure reads: an elementwise body
// (its output may take its operand's buffer), two operands mixed, an
// in-place update, a reduction calling `add_f32`, one operand
// in two slots, two outputs, an output fusion with a dot under an add, and
// a fusion in a loop body.
constexpr absl::string_view kBodies = R"(
HloModule bodies, is_scheduled=true
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
elementwise_body {
  e0 = f32[4096]{0} parameter(0)
  ROOT e1 = f32[4096]{0} exponential(e0)
}
mixing_body {
  i0 = f32[4096]{0} parameter(0)
  i1 = f32[4096]{0} parameter(1)
  i2 = f32[4096]{0} tanh(i0)
  ROOT i3 = f32[4096]{0} add(i2, i1)
}
update_body {
  up0 = f32[4096]{0} parameter(0)
  up1 = f32[16]{0} parameter(1)
  up2 = s32[] parameter(2)
  ROOT up3 = f32[4096]{0} dynamic-update-slice(up0, up1, up2)
}
reduce_body {
  r0 = f32[4096]{0} parameter(0)
  r1 = f32[] constant(0)
  r2 = f32[] reduce(r0, r1), dimensions={0}, to_apply=add_f32
  ROOT r3 = f32[4096]{0} broadcast(r2), dimensions={}
}
twice_body {
  t0 = f32[4096]{0} parameter(0)
  t1 = f32[4096]{0} parameter(1)
  ROOT t2 = f32[4096]{0} multiply(t0, t1)
}
pair_body {
  q0 = f32[4096]{0} parameter(0)
  q1 = f32[4096]{0} negate(q0)
  q2 = f32[4096]{0} sqrt(q0)
  ROOT q3 = (f32[4096]{0}, f32[4096]{0}) tuple(q1, q2)
}
dot_add_body {
  d0 = f32[64,64]{1,0} parameter(0)
  d1 = f32[64,64]{1,0} parameter(1)
  d2 = f32[64,64]{1,0} dot(d0, d1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT d3 = f32[64,64]{1,0} add(d2, d1)
}
loop_fused {
  l0 = f32[4096]{0} parameter(0)
  ROOT l1 = f32[4096]{0} negate(l0)
}
cond {
  c0 = (s32[], f32[4096]{0}) parameter(0)
  c1 = s32[] get-tuple-element(c0), index=0
  c2 = s32[] constant(3)
  ROOT c3 = pred[] compare(c1, c2), direction=LT
}
body {
  b0 = (s32[], f32[4096]{0}) parameter(0)
  b1 = s32[] get-tuple-element(b0), index=0
  b2 = f32[4096]{0} get-tuple-element(b0), index=1
  b3 = s32[] constant(1)
  b4 = s32[] add(b1, b3)
  b5 = f32[4096]{0} fusion(b2), kind=kLoop, calls=loop_fused
  ROOT b6 = (s32[], f32[4096]{0}) tuple(b4, b5)
}
ENTRY main {
  p = f32[4096]{0} parameter(0)
  patch = f32[16]{0} parameter(1)
  at = s32[] parameter(2)
  m = f32[64,64]{1,0} parameter(3)
  a = f32[4096]{0} fusion(p), kind=kLoop, calls=elementwise_body
  b = f32[4096]{0} fusion(a, p), kind=kLoop, calls=mixing_body
  c = f32[4096]{0} fusion(b, patch, at), kind=kLoop, calls=update_body
  d = f32[4096]{0} fusion(c), kind=kInput, calls=reduce_body
  e = f32[4096]{0} fusion(d, d), kind=kLoop, calls=twice_body
  f = (f32[4096]{0}, f32[4096]{0}) fusion(e), kind=kLoop, calls=pair_body
  f0 = f32[4096]{0} get-tuple-element(f), index=0
  f1 = f32[4096]{0} get-tuple-element(f), index=1
  g = f32[64,64]{1,0} fusion(m, m), kind=kOutput, calls=dot_add_body
  zero = s32[] constant(0)
  init = (s32[], f32[4096]{0}) tuple(zero, f0)
  w = (s32[], f32[4096]{0}) while(init), condition=cond, body=body
  w1 = f32[4096]{0} get-tuple-element(w), index=1
  h = f32[4096]{0} add(w1, f1)
  ROOT out = (f32[4096]{0}, f32[64,64]{1,0}) tuple(h, g)
})";

int64_t Bytes(const Shape& shape) { return ShapeUtil::ByteSizeOf(shape, 8); }

int64_t InstructionCount(const HloModule& module) {
  int64_t count = 0;
  for (const HloComputation* computation : module.computations()) {
    count += computation->instruction_count();
  }
  return count;
}

class JudgingCopyTest : public RematHloTest {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(ParseModule(kBodies)); }

  // The module's figure by `figure`, with XLA's default AliasInfo, and the
  // judging copy's with its own.
  void ExpectSameFigure(MemoryFigure figure, const JudgingCopy& copy) {
    MemoryFigureOptions options;
    options.figure = figure;
    absl::StatusOr<int64_t> whole =
        MeasureMemory(*module_, Bytes, /*alias_info=*/nullptr, options);
    ASSERT_TRUE(whole.ok()) << whole.status();
    absl::StatusOr<int64_t> judged =
        MeasureMemory(*copy.module, Bytes, copy.alias_info.get(), options);
    ASSERT_TRUE(judged.ok()) << judged.status();
    EXPECT_EQ(*judged, *whole) << MemoryFigureName(figure);
  }
};

TEST_F(JudgingCopyTest, StandInBodiesKeepBothFigures) {
  JudgingCopier copier(/*alias_info=*/nullptr, JudgingCopyKind::kStandInBodies,
                       nullptr);
  absl::StatusOr<JudgingCopy> copy = copier.Copy(*module_);
  ASSERT_TRUE(copy.ok()) << copy.status();
  ExpectSameFigure(MemoryFigure::kHeapSimulator, *copy);
  ExpectSameFigure(MemoryFigure::kBufferAssignment, *copy);
  EXPECT_LT(InstructionCount(*copy->module), InstructionCount(*module_));
  // Every instruction of the unfused computations is there by name.
  for (const HloInstruction* instruction :
       module_->entry_computation()->instructions()) {
    EXPECT_NE(copy->module->entry_computation()->GetInstructionWithName(
                  instruction->name()),
              nullptr)
        << instruction->name();
  }
}

TEST_F(JudgingCopyTest, AStandInReadsWhatItsBodyReadsAndCallsWhatItCalls) {
  JudgingCopier copier(nullptr, JudgingCopyKind::kStandInBodies, nullptr);
  absl::StatusOr<JudgingCopy> copy = copier.Copy(*module_);
  ASSERT_TRUE(copy.ok()) << copy.status();
  HloComputation* entry = copy->module->entry_computation();
  const HloInstruction* mixing =
      entry->GetInstructionWithName("b")->fused_expression_root();
  EXPECT_EQ(mixing->opcode(), HloOpcode::kCustomCall);
  EXPECT_EQ(mixing->custom_call_target(), kStandInTarget);
  ASSERT_EQ(mixing->operand_count(), 2);
  EXPECT_EQ(mixing->operand(1)->parameter_number(), 1);
  const HloInstruction* reducing =
      entry->GetInstructionWithName("d")->fused_expression_root();
  ASSERT_EQ(reducing->called_computations().size(), 1);
  EXPECT_EQ(reducing->called_computations()[0]->name(), "add_f32");
}

TEST_F(JudgingCopyTest, InPlacePairsAndSharingComeFromTheRealBody) {
  JudgingCopier copier(nullptr, JudgingCopyKind::kStandInBodies, nullptr);
  absl::StatusOr<JudgingCopy> copy = copier.Copy(*module_);
  ASSERT_TRUE(copy.ok()) << copy.status();
  HloComputation* entry = copy->module->entry_computation();
  const AliasInfo& judged = *copy->alias_info;
  AliasInfo xla_default;
  for (absl::string_view name : {"a", "b", "c", "d", "e", "f", "g"}) {
    EXPECT_EQ(
        judged.GetInPlaceInputOutputPairs(entry->GetInstructionWithName(name)),
        xla_default.GetInPlaceInputOutputPairs(Named(name)))
        << name;
  }
  EXPECT_EQ(
      judged.GetInPlaceInputOutputPairs(entry->GetInstructionWithName("c"))
          .size(),
      1);
}

TEST_F(JudgingCopyTest, BodiesAreLearntOnceAndCopiesOfThemShareWhatWasLearnt) {
  HloComputation* entry = module_->entry_computation();
  HloInstruction* a = Named("a");
  const HloComputation* original = a->fused_instructions_computation();
  // A copy of `a` calling a copy of its body, as the planner's clones do.
  HloInstruction* clone = entry->AddInstruction(a->Clone("remat"));
  module_->schedule().GetOrCreateSequence(entry).push_back(clone);
  const HloComputation* copied_body = clone->fused_instructions_computation();
  ASSERT_NE(copied_body, original);
  JudgingCopier copier(nullptr, JudgingCopyKind::kStandInBodies,
                       [&](const HloComputation* body) {
                         return body == copied_body ? original : nullptr;
                       });
  ASSERT_TRUE(copier.Copy(*module_).ok());
  const int learnt = copier.bodies_learnt();
  EXPECT_EQ(learnt, 8);  // eight bodies; the copy is `a`'s
  ASSERT_TRUE(copier.Copy(*module_).ok());
  EXPECT_EQ(copier.bodies_learnt(), learnt);
}

TEST_F(JudgingCopyTest,
       CopiersOfModulesClonedAlikeLearnEachBodyOnceBetweenThem) {
  // Two lanes' copies of the module, judged at once through one store: every
  // body is learnt once, by one of them, and each lane reads them all. (A
  // clone renames its fused computations: the module cloned from keeps a
  // store of its own.)
  std::unique_ptr<HloModule> lane_modules[] = {module_->Clone(""),
                                               module_->Clone("")};
  auto store = std::make_shared<FusedBodyFactsStore>(/*alias_info=*/nullptr);
  JudgingCopier lanes[] = {
      JudgingCopier(nullptr, JudgingCopyKind::kStandInBodies, nullptr),
      JudgingCopier(nullptr, JudgingCopyKind::kStandInBodies, nullptr)};
  for (JudgingCopier& lane : lanes) lane.UseStore(store);
  absl::StatusOr<JudgingCopy> copies[2];
  {
    std::thread first([&] { copies[0] = lanes[0].Copy(*lane_modules[0]); });
    copies[1] = lanes[1].Copy(*lane_modules[1]);
    first.join();
  }
  for (const absl::StatusOr<JudgingCopy>& copy : copies) {
    ASSERT_TRUE(copy.ok()) << copy.status();
    ExpectSameFigure(MemoryFigure::kHeapSimulator, *copy);
    ExpectSameFigure(MemoryFigure::kBufferAssignment, *copy);
  }
  EXPECT_EQ(store->size(), 8);
  for (const JudgingCopier& lane : lanes) EXPECT_EQ(lane.bodies_learnt(), 8);
}

TEST_F(JudgingCopyTest, AWholeCopyKeepsEveryBody) {
  JudgingCopier copier(nullptr, JudgingCopyKind::kWhole, nullptr);
  absl::StatusOr<JudgingCopy> copy = copier.Copy(*module_);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(InstructionCount(*copy->module), InstructionCount(*module_));
  ExpectSameFigure(MemoryFigure::kBufferAssignment, *copy);
  EXPECT_EQ(copier.bodies_learnt(), 0);
}

}  // namespace
}  // namespace remat
}  // namespace xla
