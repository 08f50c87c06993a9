// Test tools shared by the engine's unit tests: a module parsed and
// verified, instructions found by name, and HLO modules several tests plan
// on. tests/hlo_cases.py reads the same modules from this file, so that the
// C++ and the Python tests hold one copy.
#ifndef XLA_SERVICE_REMAT_REMAT_TEST_UTIL_H_
#define XLA_SERVICE_REMAT_REMAT_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/parser/hlo_parser.h"
#include "xla/service/hlo_verifier.h"

namespace xla {
namespace remat {

// `hlo` parsed, then checked by XLA's verifier as the pass checks its output
// (layouts insensitive, mixed precision allowed): a test module the pass
// would refuse fails here, where its text is.
inline absl::StatusOr<std::unique_ptr<HloModule>> ParseAndVerify(
    absl::string_view hlo) {
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      ParseAndReturnUnverifiedModule(hlo);
  if (!module.ok()) return module.status();
  HloVerifier verifier(/*layout_sensitive=*/false,
                       /*allow_mixed_precision=*/true);
  absl::Status verified = verifier.Run(module->get()).status();
  if (!verified.ok()) return verified;
  return module;
}

// The instruction called `name`: the entry's, else the first of another
// computation's; null when there is none.
inline HloInstruction* FindInstruction(const HloModule& module,
                                       absl::string_view name) {
  if (HloInstruction* found =
          module.entry_computation()->GetInstructionWithName(name)) {
    return found;
  }
  for (HloComputation* computation : module.computations()) {
    if (HloInstruction* found = computation->GetInstructionWithName(name)) {
      return found;
    }
  }
  return nullptr;
}

// A test on one verified module (ParseAndVerify), its instructions by name.
class RematHloTest : public ::testing::Test {
 protected:
  void ParseModule(absl::string_view hlo) {
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(hlo);
    ASSERT_TRUE(module.ok()) << module.status();
    module_ = std::move(*module);
  }

  HloInstruction* Named(absl::string_view name) const {
    return FindInstruction(*module_, name);
  }

  std::unique_ptr<HloModule> module_;
};

// f32[256,256]: the size of most values in the modules below and in the
// tests' hand-built graphs.
inline constexpr int64_t kSquareValueBytes = 256 * 256 * 4;

// `a`, `b` and `c` stay live across the middle of the chain for the late
// adds; `a` is cheap to recompute from `p`, which is live anyway.
inline constexpr absl::string_view kChain = R"(
HloModule chain, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  a = f32[256,256]{1,0} exponential(p)
  b = f32[256,256]{1,0} tanh(a)
  c = f32[256,256]{1,0} exponential(b)
  d = f32[256,256]{1,0} tanh(c)
  e = f32[256,256]{1,0} exponential(d)
  f = f32[256,256]{1,0} add(e, c)
  g = f32[256,256]{1,0} add(f, b)
  ROOT r = f32[256,256]{1,0} add(g, a)
})";

// `c` is live across the t-region, but its operand `b` and b's operand `a`
// die early: recomputing `c` alone keeps `b` alive (no gain); only the whole
// chain a -> b -> c, from the parameter, frees memory.
inline constexpr absl::string_view kPathChain = R"(
HloModule path_chain, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  a = f32[256,256]{1,0} exponential(p)
  b = f32[256,256]{1,0} negate(a)
  c = f32[256,256]{1,0} exponential(b)
  e0 = f32[256,256]{1,0} add(c, p)
  t1 = f32[256,256]{1,0} negate(e0)
  t2 = f32[256,256]{1,0} exponential(t1)
  t3 = f32[256,256]{1,0} add(t2, t1)
  t4 = f32[256,256]{1,0} negate(t3)
  t5 = f32[256,256]{1,0} add(t4, t3)
  ROOT r = f32[256,256]{1,0} add(t5, c)
})";

inline constexpr absl::string_view kWhileLoop = R"(
HloModule while_loop, is_scheduled=true
cond {
  s = (s32[], f32[128,128]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[128,128]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[128,128]{1,0} get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  v2 = f32[128,128]{1,0} tanh(v)
  ROOT out = (s32[], f32[128,128]{1,0}) tuple(i2, v2)
}
ENTRY main {
  p = f32[128,128]{1,0} parameter(0)
  a = f32[128,128]{1,0} exponential(p)
  b = f32[128,128]{1,0} tanh(a)
  zero = s32[] constant(0)
  init = (s32[], f32[128,128]{1,0}) tuple(zero, b)
  loop = (s32[], f32[128,128]{1,0}) while(init), condition=cond, body=body
  res = f32[128,128]{1,0} get-tuple-element(loop), index=1
  c = f32[128,128]{1,0} add(res, a)
  ROOT r = f32[128,128]{1,0} add(c, p)
})";

// `b` leaves the module: recomputing it frees nothing.
inline constexpr absl::string_view kTupleOutput = R"(
HloModule tuple_output, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  a = f32[256,256]{1,0} exponential(p)
  b = f32[256,256]{1,0} tanh(a)
  c = f32[256,256]{1,0} exponential(b)
  d = f32[256,256]{1,0} tanh(c)
  e = f32[256,256]{1,0} add(d, a)
  ROOT t = (f32[256,256]{1,0}, f32[256,256]{1,0}) tuple(e, b)
})";

// `small` (64 KiB) is the only value worth recomputing (the dots cannot
// write over an operand).
inline constexpr absl::string_view kSmallNode = R"(
HloModule small_node, is_scheduled=true
ENTRY main {
  p = f32[128,128]{1,0} parameter(0)
  small = f32[128,128]{1,0} exponential(p)
  b = f32[128,128]{1,0} tanh(small)
  c = f32[128,128]{1,0} dot(b, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d = f32[128,128]{1,0} dot(c, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[128,128]{1,0} add(d, small)
})";

// `a` waits from the start for the root; recomputing it from the parameter
// there frees it across the middle.
inline constexpr absl::string_view kLateUse = R"(
HloModule late_use, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  a = f32[256,256]{1,0} exponential(p)
  b = f32[256,256]{1,0} tanh(a)
  c = f32[256,256]{1,0} exponential(b)
  d = f32[256,256]{1,0} tanh(c)
  e = f32[256,256]{1,0} add(d, c)
  ROOT r = f32[256,256]{1,0} add(e, a)
})";

// `dw` reads `x` and `dy` last, at the end, and defines one row: a weight
// gradient the scheduler left behind the rest of the step (m1..m3).
// The reduction and the fused weight gradient (a row of x * dy) the modules
// below call.
inline constexpr absl::string_view kGradientComputations = R"(
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused_gradient {
  in_x = f32[256,256]{1,0} parameter(0)
  in_dy = f32[256,256]{1,0} parameter(1)
  product = f32[256,256]{1,0} multiply(in_x, in_dy)
  init = f32[] constant(0)
  ROOT rows = f32[256]{0} reduce(product, init), dimensions={0}, to_apply=sum
}
)";

// A module of `kGradientComputations` and `entry`, scheduled as written.
inline std::string GradientModule(absl::string_view entry) {
  return absl::StrCat("HloModule gradient, is_scheduled=true\n",
                      kGradientComputations, entry);
}

inline constexpr absl::string_view kLateGradient = R"(
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  x = f32[256,256]{1,0} exponential(p)
  dy = f32[256,256]{1,0} tanh(p)
  m1 = f32[256,256]{1,0} negate(p)
  m2 = f32[256,256]{1,0} exponential(m1)
  m3 = f32[256,256]{1,0} tanh(m2)
  dw = f32[256]{0} fusion(x, dy), kind=kInput, calls=fused_gradient
  ROOT out = (f32[256]{0}, f32[256,256]{1,0}) tuple(dw, m3)
})";

// A forward loop pushes the same value v at every step onto a 64-row stack;
// the backward loop pops every row and sums: out = 64 * sin(w). Counters
// start from copies of the constant, as copy insertion leaves them.
inline constexpr absl::string_view kInvariantStack = R"(
HloModule invariant_stack, is_scheduled=true
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
  row = f32[1,128,256] reshape(v)
  zero = s32[] constant(0)
  pushed = f32[64,128,256] dynamic-update-slice(stack, row, i, zero, zero)
  one = s32[] constant(1)
  next = s32[] add(i, one)
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
  last = s32[] constant(63)
  r = s32[] subtract(last, j)
  zero = s32[] constant(0)
  slice = f32[1,128,256] dynamic-slice(stack, r, zero, zero), dynamic_slice_sizes={1,128,256}
  read = f32[128,256] reshape(slice)
  sum = f32[128,256] add(acc, read)
  one = s32[] constant(1)
  next = s32[] add(j, one)
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

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_TEST_UTIL_H_
