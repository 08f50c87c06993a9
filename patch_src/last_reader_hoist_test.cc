#include "xla/service/remat/last_reader_hoist.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

constexpr int64_t kRow = 256 * 4;  // f32[256]

struct Hoisted {
  std::unique_ptr<HloModule> module;
  HoistResult result;
  std::vector<std::string> order;  // the entry's schedule, by name
};

absl::StatusOr<Hoisted> Hoist(absl::string_view hlo) {
  Hoisted hoisted;
  TF_ASSIGN_OR_RETURN(hoisted.module, ParseAndVerify(hlo));
  TF_ASSIGN_OR_RETURN(hoisted.result, HoistLastReaders(hoisted.module.get(),
                                                       PlainBytes, nullptr));
  for (const HloInstruction* instruction :
       hoisted.module->schedule()
           .sequence(hoisted.module->entry_computation())
           .instructions()) {
    hoisted.order.emplace_back(instruction->name());
  }
  return hoisted;
}

TEST(LastReaderHoistTest, AGradientRunsRightAfterWhatItReads) {
  absl::StatusOr<Hoisted> hoisted = Hoist(GradientModule(kLateGradient));
  ASSERT_TRUE(hoisted.ok()) << hoisted.status();
  EXPECT_EQ(hoisted->result.moved, 1);
  EXPECT_EQ(hoisted->result.bytes_freed, 2 * kSquareValueBytes - kRow);
  EXPECT_EQ(hoisted->order,
            (std::vector<std::string>{"p", "x", "dy", "dw", "m1", "m2", "m3",
                                      "out"}));
  EXPECT_TRUE(hoisted->module->schedule().Verify().ok());
}

TEST(LastReaderHoistTest, ItStaysBehindTheOtherReadersOfWhatDies) {
  // `other` reads `x` after m1: `dw` may free `x` only after it.
  constexpr absl::string_view kOtherReader = R"(
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  zero = f32[] constant(0)
  x = f32[256,256]{1,0} exponential(p)
  dy = f32[256,256]{1,0} tanh(p)
  m1 = f32[256,256]{1,0} negate(p)
  other = f32[256]{0} reduce(x, zero), dimensions={0}, to_apply=sum
  m2 = f32[256,256]{1,0} exponential(m1)
  m3 = f32[256,256]{1,0} tanh(m2)
  dw = f32[256]{0} fusion(x, dy), kind=kInput, calls=fused_gradient
  ROOT out = (f32[256]{0}, f32[256,256]{1,0}, f32[256]{0}) tuple(dw, m3, other)
})";
  absl::StatusOr<Hoisted> hoisted = Hoist(GradientModule(kOtherReader));
  ASSERT_TRUE(hoisted.ok()) << hoisted.status();
  EXPECT_EQ(hoisted->result.moved, 1);
  EXPECT_EQ(hoisted->order,
            (std::vector<std::string>{"p", "zero", "x", "dy", "m1", "other",
                                      "dw", "m2", "m3", "out"}));
}

// A module of `kGradientComputations` and an entry that computes `dw` and
// then runs `rest`, whose output {0} is written into the donated parameter
// 1; scheduled as written.
std::string DonatedModule(absl::string_view rest) {
  return absl::StrCat(
      "HloModule donated, is_scheduled=true, "
      "input_output_alias={ {0}: (1, {}, may-alias) }\n",
      kGradientComputations, R"(
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  x = f32[256,256]{1,0} exponential(p)
  dy = f32[256,256]{1,0} tanh(p)
  dw = f32[256]{0} fusion(x, dy), kind=kInput, calls=fused_gradient)",
      rest);
}

TEST(LastReaderHoistTest, AnInPlaceUpdateRunsRightAfterItsGradient) {
  // The update of the donated weight `w` was left at the end, `w` placed
  // right before it: it moves, with `w`, to just after `dw`.
  constexpr absl::string_view kLateUpdate = R"(
  m1 = f32[256,256]{1,0} negate(p)
  m2 = f32[256,256]{1,0} exponential(m1)
  w = f32[256]{0} parameter(1)
  update = f32[256]{0} subtract(w, dw)
  ROOT out = (f32[256]{0}, f32[256,256]{1,0}) tuple(update, m2)
})";
  absl::StatusOr<Hoisted> hoisted = Hoist(DonatedModule(kLateUpdate));
  ASSERT_TRUE(hoisted.ok()) << hoisted.status();
  EXPECT_EQ(hoisted->result.moved, 1);
  // `dw` dies; the update writes into `w`'s buffer, which holds nothing new.
  EXPECT_EQ(hoisted->result.bytes_freed, kRow);
  EXPECT_EQ(hoisted->order,
            (std::vector<std::string>{"p", "x", "dy", "dw", "w", "update", "m1",
                                      "m2", "out"}));
  EXPECT_TRUE(hoisted->module->schedule().Verify().ok());
}

TEST(LastReaderHoistTest, AnInPlaceUpdateStaysBehindReadersOfWhatItOverwrites) {
  // `scaled` reads the weight the update overwrites, after m1.
  constexpr absl::string_view kReadBeforeUpdate = R"(
  w = f32[256]{0} parameter(1)
  m1 = f32[256,256]{1,0} negate(p)
  scaled = f32[256]{0} negate(w)
  m2 = f32[256,256]{1,0} exponential(m1)
  update = f32[256]{0} subtract(w, dw)
  ROOT out = (f32[256]{0}, f32[256,256]{1,0}, f32[256]{0}) tuple(update, m2, scaled)
})";
  absl::StatusOr<Hoisted> hoisted = Hoist(DonatedModule(kReadBeforeUpdate));
  ASSERT_TRUE(hoisted.ok()) << hoisted.status();
  EXPECT_EQ(hoisted->result.moved, 1);
  EXPECT_EQ(hoisted->order,
            (std::vector<std::string>{"p", "x", "dy", "dw", "w", "m1", "scaled",
                                      "update", "m2", "out"}));
}

TEST(LastReaderHoistTest, NothingMovesThatFreesNoMoreThanItHolds) {
  // A late negate of `x` frees `x` and holds as much again.
  constexpr absl::string_view kSameSize = R"(
HloModule same_size, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  x = f32[256,256]{1,0} exponential(p)
  m1 = f32[256,256]{1,0} negate(p)
  m2 = f32[256,256]{1,0} exponential(m1)
  late = f32[256,256]{1,0} negate(x)
  ROOT out = (f32[256,256]{1,0}, f32[256,256]{1,0}) tuple(late, m2)
})";
  absl::StatusOr<Hoisted> hoisted = Hoist(kSameSize);
  ASSERT_TRUE(hoisted.ok()) << hoisted.status();
  EXPECT_EQ(hoisted->result.moved, 0);
  EXPECT_EQ(hoisted->order[4], "late");
}

TEST(LastReaderHoistTest, ParametersNeverDieSoReadingThemFreesNothing) {
  constexpr absl::string_view kReadsParameters = R"(
HloModule reads_parameters, is_scheduled=true
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  m1 = f32[256,256]{1,0} negate(p)
  m2 = f32[256,256]{1,0} exponential(m1)
  zero = f32[] constant(0)
  row = f32[256]{0} reduce(p, zero), dimensions={0}, to_apply=sum
  ROOT out = (f32[256]{0}, f32[256,256]{1,0}) tuple(row, m2)
})";
  absl::StatusOr<Hoisted> hoisted = Hoist(kReadsParameters);
  ASSERT_TRUE(hoisted.ok()) << hoisted.status();
  EXPECT_EQ(hoisted->result.moved, 0);
}

TEST(LastReaderHoistTest, AControlEdgeKeepsItWhereItIs) {
  const std::string hlo = absl::StrReplaceAll(
      GradientModule(kLateGradient),
      {{"calls=fused_gradient",
        "calls=fused_gradient, control-predecessors={m3}"}});
  absl::StatusOr<Hoisted> hoisted = Hoist(hlo);
  ASSERT_TRUE(hoisted.ok()) << hoisted.status();
  EXPECT_EQ(hoisted->result.moved, 0);
  EXPECT_EQ(hoisted->order[6], "dw");
}

TEST(LastReaderHoistTest, NeedsASchedule) {
  const std::string unscheduled = absl::StrReplaceAll(
      GradientModule(kLateGradient), {{", is_scheduled=true", ""}});
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      ParseAndVerify(unscheduled);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_FALSE(HoistLastReaders(module->get(), PlainBytes, nullptr).ok());
}

}  // namespace
}  // namespace remat
}  // namespace xla
