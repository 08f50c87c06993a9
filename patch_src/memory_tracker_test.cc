#include "xla/service/remat/memory_tracker.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {
namespace {

// `update` is the step's output {0}; `header_extra` may alias it with the
// donated parameter 0.
std::string UpdateModule(absl::string_view header_extra) {
  return absl::StrCat("HloModule update, is_scheduled=true", header_extra, R"(
ENTRY main {
  w = f32[256,256]{1,0} parameter(0)
  e = f32[256,256]{1,0} exponential(w)
  update = f32[256,256]{1,0} subtract(w, e)
  ROOT out = (f32[256,256]{1,0}) tuple(update)
})");
}

absl::StatusOr<int64_t> TrackedPeak(absl::string_view hlo,
                                    AliasedOutputs aliased_outputs) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(hlo);
  if (!module.ok()) return module.status();
  absl::StatusOr<ModuleMemory> memory =
      TrackModuleMemory(**module, PlainBytes, aliased_outputs);
  if (!memory.ok()) return memory.status();
  return memory->peak_bytes;
}

constexpr absl::string_view kDonatedAlias =
    ", input_output_alias={ {0}: (0, {}, may-alias) }";

TEST(MemoryTrackerTest, AnOutputOfItsOwnTakesBytesOfItsOwn) {
  absl::StatusOr<int64_t> peak =
      TrackedPeak(UpdateModule(""), AliasedOutputs::kInParameter);
  ASSERT_TRUE(peak.ok()) << peak.status();
  // w, e and update at `update` (the tuple table comes after).
  EXPECT_EQ(*peak, 3 * kSquareValueBytes);
}

TEST(MemoryTrackerTest, AnOutputWrittenIntoADonatedParameterAddsNothing) {
  absl::StatusOr<int64_t> peak =
      TrackedPeak(UpdateModule(kDonatedAlias), AliasedOutputs::kInParameter);
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_EQ(*peak, 2 * kSquareValueBytes);
}

TEST(MemoryTrackerTest, CountedApartTheAliasedOutputTakesItsOwnBytes) {
  absl::StatusOr<int64_t> peak =
      TrackedPeak(UpdateModule(kDonatedAlias), AliasedOutputs::kOwnBytes);
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_EQ(*peak, 3 * kSquareValueBytes);
}

// The weight is read once, by a copy, before the update's peak.
std::string CopiedUpdateModule(absl::string_view header_extra) {
  return absl::StrCat("HloModule copied, is_scheduled=true", header_extra, R"(
ENTRY main {
  w = f32[256,256]{1,0} parameter(0)
  c = f32[256,256]{1,0} copy(w)
  e = f32[256,256]{1,0} exponential(c)
  update = f32[256,256]{1,0} subtract(c, e)
  ROOT out = (f32[256,256]{1,0}) tuple(update)
})");
}

TEST(MemoryTrackerTest, ADonatedParameterCountedApartEndsAtItsLastUse) {
  // As XLA's live ranges count it: c, e and update at `update`.
  absl::StatusOr<int64_t> apart =
      TrackedPeak(CopiedUpdateModule(kDonatedAlias), AliasedOutputs::kOwnBytes);
  ASSERT_TRUE(apart.ok()) << apart.status();
  EXPECT_EQ(*apart, 3 * kSquareValueBytes);
  // In the parameter, it holds the output to the end: w, c and e.
  absl::StatusOr<int64_t> held = TrackedPeak(CopiedUpdateModule(kDonatedAlias),
                                             AliasedOutputs::kInParameter);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(*held, 3 * kSquareValueBytes);
  // Not donated, it is the caller's to the end: w, c, e and update.
  absl::StatusOr<int64_t> kept =
      TrackedPeak(CopiedUpdateModule(""), AliasedOutputs::kOwnBytes);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, 4 * kSquareValueBytes);
}

}  // namespace
}  // namespace remat
}  // namespace xla
