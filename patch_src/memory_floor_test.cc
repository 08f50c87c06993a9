#include "xla/service/remat/memory_floor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/remat_schedule.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {
namespace {

constexpr int64_t kVector = 1024 * 4;  // f32[1024]

std::unique_ptr<HloModule> Parse(absl::string_view hlo) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(hlo);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? *std::move(module) : nullptr;
}

// The floor of `hlo`, checked to lie at or below the HeapSimulator's peak of
// the module's own (textual) schedule: it is a lower bound for the referee.
int64_t FloorOf(absl::string_view hlo) {
  std::unique_ptr<HloModule> module = Parse(hlo);
  if (module == nullptr) return -1;
  absl::StatusOr<MemoryFloor> floor = ComputeMemoryFloor(*module, PlainBytes);
  EXPECT_TRUE(floor.ok()) << floor.status();
  if (!floor.ok()) return -1;
  absl::StatusOr<int64_t> peak = HeapSimulatorPeak(*module, PlainBytes);
  EXPECT_TRUE(peak.ok()) << peak.status();
  if (peak.ok()) EXPECT_LE(floor->bytes, *peak) << "at " << floor->at;
  return floor->bytes;
}

TEST(MemoryFloorTest, ParametersPlusTheResultThatNeedsThem) {
  EXPECT_EQ(FloorOf(R"(
HloModule add, is_scheduled=true
ENTRY e {
  p0 = f32[1024] parameter(0)
  p1 = f32[1024] parameter(1)
  ROOT s = f32[1024] add(p0, p1)
})"),
            3 * kVector);
}

TEST(MemoryFloorTest, AResultMayTakeOverADyingOperandsBuffer) {
  // Each exponential can write over its operand: one value beside p0.
  EXPECT_EQ(FloorOf(R"(
HloModule chain, is_scheduled=true
ENTRY e {
  p0 = f32[1024] parameter(0)
  a = f32[1024] exponential(p0)
  b = f32[1024] exponential(a)
  c = f32[1024] exponential(b)
  ROOT d = f32[1024] exponential(c)
})"),
            2 * kVector);
}

TEST(MemoryFloorTest, TwoOperandsNeededAtOnce) {
  // x and y both feed s: p0, x and y are live together; s can reuse one.
  EXPECT_EQ(FloorOf(R"(
HloModule wide, is_scheduled=true
ENTRY e {
  p0 = f32[1024] parameter(0)
  x = f32[1024] exponential(p0)
  y = f32[1024] negate(p0)
  ROOT s = f32[1024] add(x, y)
})"),
            3 * kVector);
}

TEST(MemoryFloorTest, TheLargestInstructionSetsIt) {
  // The broadcast to f32[4096] dominates; the reduce's result is small.
  EXPECT_EQ(FloorOf(R"(
HloModule wide, is_scheduled=true
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p0 = f32[1024] parameter(0)
  w = f32[4,1024] broadcast(p0), dimensions={1}
  z = f32[] constant(0)
  ROOT r = f32[1024] reduce(w, z), dimensions={0}, to_apply=add
})"),
            kVector + 4 * kVector + kVector);
}

TEST(MemoryFloorTest, ADonatedParameterSharesItsBufferWithTheOutput) {
  EXPECT_EQ(FloorOf(R"(
HloModule donated, is_scheduled=true, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY e {
  p0 = f32[1024] parameter(0)
  ROOT n = f32[1024] negate(p0)
})"),
            kVector);
}

TEST(MemoryFloorTest, InPlaceUpdateCountsItsBufferOnce) {
  // dynamic-update-slice writes into a's buffer: a and d are one buffer.
  EXPECT_EQ(FloorOf(R"(
HloModule dus, is_scheduled=true
ENTRY e {
  p0 = f32[1024] parameter(0)
  u = f32[16] parameter(1)
  i = s32[] parameter(2)
  a = f32[1024] negate(p0)
  ROOT d = f32[1024] dynamic-update-slice(a, u, i)
})"),
            kVector + 64 + 4 + kVector);
}

TEST(MemoryFloorTest, ConstantsCostNothing) {
  // The HeapSimulator gives constants no memory; neither does the floor.
  EXPECT_EQ(FloorOf(R"(
HloModule constant, is_scheduled=true
ENTRY e {
  p0 = f32[4] parameter(0)
  c = f32[4] constant({1, 2, 3, 4})
  ROOT s = f32[4] add(p0, c)
})"),
            16 + 16);
}

TEST(MemoryFloorTest, NamesWhereItIsReached) {
  std::unique_ptr<HloModule> module = Parse(R"(
HloModule where
ENTRY e {
  p0 = f32[1024] parameter(0)
  big = f32[8,1024] broadcast(p0), dimensions={1}
  ROOT s = f32[1,1024] slice(big), slice={[0:1], [0:1024]}
})");
  ASSERT_NE(module, nullptr);
  absl::StatusOr<MemoryFloor> floor = ComputeMemoryFloor(*module, PlainBytes);
  ASSERT_TRUE(floor.ok()) << floor.status();
  EXPECT_EQ(floor->parameter_bytes, kVector);
  EXPECT_EQ(floor->at, "s");
  EXPECT_EQ(floor->bytes, kVector + 8 * kVector + kVector);
}

}  // namespace
}  // namespace remat
}  // namespace xla
