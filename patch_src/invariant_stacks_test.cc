#include "xla/service/remat/invariant_stacks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/hlo_verifier.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

// The same loops as XLA:GPU leaves them: the push and the pop are fusions
// (the pop's row index computed inside, its row bitcast outside), and the
// scheduler's control edges hang on both.
constexpr absl::string_view kFusedStack = R"(
HloModule fused_stack, is_scheduled=true
fused_push {
  s = f32[64,128,256] parameter(0)
  i = s32[] parameter(1)
  v = f32[128,256] parameter(2)
  row = f32[1,128,256] bitcast(v)
  zero = s32[] constant(0)
  ROOT pushed = f32[64,128,256] dynamic-update-slice(s, row, i, zero, zero)
}
fused_pop {
  s = f32[64,128,256] parameter(0)
  j = s32[] parameter(1)
  last = s32[] constant(63)
  r = s32[] subtract(last, j)
  zero = s32[] constant(0)
  ROOT slice = f32[1,128,256] dynamic-slice(s, r, zero, zero), dynamic_slice_sizes={1,128,256}
}
fwd_cond {
  p = (s32[], f32[64,128,256], f32[128,256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(64)
  ROOT lt = pred[] compare(i, n), direction=LT
}
fwd_body {
  p = (s32[], f32[64,128,256], f32[128,256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  stack = f32[64,128,256] get-tuple-element(p), index=1
  v = f32[128,256] get-tuple-element(p), index=2
  pushed = f32[64,128,256] fusion(stack, i, v), kind=kLoop, calls=fused_push
  one = s32[] constant(1)
  next = s32[] add(i, one), control-predecessors={pushed}
  ROOT t = (s32[], f32[64,128,256], f32[128,256]) tuple(next, pushed, v)
}
bwd_cond {
  p = (s32[], f32[64,128,256], f32[128,256]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  n = s32[] constant(64)
  ROOT lt = pred[] compare(j, n), direction=LT
}
bwd_body {
  p = (s32[], f32[64,128,256], f32[128,256]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  stack = f32[64,128,256] get-tuple-element(p), index=1
  acc = f32[128,256] get-tuple-element(p), index=2
  slice = f32[1,128,256] fusion(stack, j), kind=kLoop, calls=fused_pop
  read = f32[128,256] bitcast(slice)
  sum = f32[128,256] add(acc, read)
  one = s32[] constant(1)
  next = s32[] add(j, one), control-predecessors={slice}
  ROOT t = (s32[], f32[64,128,256], f32[128,256]) tuple(next, stack, sum)
}
ENTRY main {
  w = f32[128,256] parameter(0)
  v = f32[128,256] sine(w)
  zero = s32[] constant(0)
  fz = f32[] constant(0)
  empty = f32[64,128,256] broadcast(fz), dimensions={}
  i0 = s32[] copy(zero)
  init = (s32[], f32[64,128,256], f32[128,256]) tuple(i0, empty, v)
  fwd = (s32[], f32[64,128,256], f32[128,256]) while(init), condition=fwd_cond, body=fwd_body
  stack = f32[64,128,256] get-tuple-element(fwd), index=1
  acc0 = f32[128,256] broadcast(fz), dimensions={}
  j0 = s32[] copy(zero)
  binit = (s32[], f32[64,128,256], f32[128,256]) tuple(j0, stack, acc0)
  bwd = (s32[], f32[64,128,256], f32[128,256]) while(binit), condition=bwd_cond, body=bwd_body
  ROOT out = f32[128,256] get-tuple-element(bwd), index=2
})";

constexpr int64_t kStackBytes = 64 * 128 * 256 * 4;

// Whether any instruction of any computation still holds a whole stack.
bool HoldsAStack(const HloModule& module) {
  const Shape stack = ShapeUtil::MakeShape(F32, {64, 128, 256});
  for (const HloComputation* computation : module.computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (ShapeUtil::Compatible(instruction->shape(), stack)) return true;
      if (!instruction->shape().IsTuple()) continue;
      for (const Shape& element : instruction->shape().tuple_shapes()) {
        if (ShapeUtil::Compatible(element, stack)) return true;
      }
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<HloModule>> Rewritten(
    absl::string_view hlo, InvariantStacksResult* result) {
  TF_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseAndVerify(hlo));
  TF_ASSIGN_OR_RETURN(*result, RemoveInvariantStacks(module.get(), PlainBytes));
  return module;
}

TEST(InvariantStacksTest, AStackOfOneInvariantValueIsReadAsTheValue) {
  InvariantStacksResult result;
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      Rewritten(kInvariantStack, &result);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(result.stacks_removed, 1);
  EXPECT_EQ(result.bytes_removed, kStackBytes);
  EXPECT_FALSE(HoldsAStack(**module));
  // Still a valid, scheduled module.
  HloVerifier verifier(/*layout_sensitive=*/false,
                       /*allow_mixed_precision=*/true);
  EXPECT_TRUE(verifier.Run(module->get()).ok());
  EXPECT_TRUE((*module)->schedule().Verify().ok());
}

TEST(InvariantStacksTest,
     TheFusedFormsOfXlaGpuAreMatchedAndRemovedWithTheirEdges) {
  InvariantStacksResult result;
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      Rewritten(kFusedStack, &result);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(result.stacks_removed, 1);
  // The push and the pop, each the source of a control edge, are gone with
  // the stack; the counters they were ordered before remain.
  EXPECT_FALSE(HoldsAStack(**module));
  HloVerifier verifier(/*layout_sensitive=*/false,
                       /*allow_mixed_precision=*/true);
  EXPECT_TRUE(verifier.Run(module->get()).ok());
  EXPECT_TRUE((*module)->schedule().Verify().ok());
}

struct NotInvariant {
  const char* why;
  const char* old_text;
  const char* new_text;
};

class StacksThatAreNotProvablyInvariantTest
    : public ::testing::TestWithParam<NotInvariant> {};

TEST_P(StacksThatAreNotProvablyInvariantTest, Stay) {
  const NotInvariant& change = GetParam();
  ASSERT_NE(kInvariantStack.find(change.old_text), absl::string_view::npos)
      << change.why;
  const std::string hlo = absl::StrReplaceAll(
      kInvariantStack, {{change.old_text, change.new_text}});
  InvariantStacksResult result;
  absl::StatusOr<std::unique_ptr<HloModule>> module = Rewritten(hlo, &result);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(result.stacks_removed, 0) << change.why;
  EXPECT_TRUE(HoldsAStack(**module)) << change.why;
}

INSTANTIATE_TEST_SUITE_P(
    Changes, StacksThatAreNotProvablyInvariantTest,
    ::testing::Values(
        NotInvariant{"the pushed value changes from step to step",
                     "ROOT t = (s32[], f32[64,128,256], f32[128,256]) "
                     "tuple(next, pushed, v)",
                     "v2 = f32[128,256] multiply(v, v)\n  ROOT t = (s32[], "
                     "f32[64,128,256], f32[128,256]) tuple(next, pushed, v2)"},
        NotInvariant{"the row is not the loop counter",
                     "dynamic-update-slice(stack, row, i, zero, zero)",
                     "dynamic-update-slice(stack, row, zero, zero, zero)"},
        NotInvariant{"the loop runs fewer steps than the stack has rows",
                     "n = s32[] constant(64)\n  ROOT lt = pred[] compare(i, n)",
                     "n = s32[] constant(63)\n  ROOT lt = pred[] compare(i, "
                     "n)"}));

}  // namespace
}  // namespace remat
}  // namespace xla
