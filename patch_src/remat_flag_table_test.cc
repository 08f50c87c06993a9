#include "xla/service/remat/remat_flag_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace xla {
namespace remat {
namespace {

int64_t Bytes(absl::string_view text) {
  absl::StatusOr<int64_t> bytes = ParseByteSize(text);
  EXPECT_TRUE(bytes.ok()) << text << ": " << bytes.status();
  return bytes.ok() ? *bytes : -1;
}

TEST(ParseByteSizeTest, PlainCountsAndBinarySuffixes) {
  EXPECT_EQ(Bytes("0"), 0);
  EXPECT_EQ(Bytes("1073741824"), int64_t{1} << 30);
  EXPECT_EQ(Bytes("512M"), int64_t{512} << 20);
  EXPECT_EQ(Bytes("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(Bytes("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(Bytes("64KiB"), int64_t{64} << 10);
  EXPECT_EQ(Bytes("2g"), int64_t{2} << 30);
  EXPECT_EQ(Bytes(" 100b "), 100);
}

TEST(ParseByteSizeTest, RejectsWhatIsNotASize) {
  for (absl::string_view bad : {"", "lots", "-1", "12X", "1e3", "M", "1.2.3"}) {
    absl::StatusOr<int64_t> bytes = ParseByteSize(bad);
    EXPECT_FALSE(bytes.ok()) << "'" << bad << "' gave " << *bytes;
    if (!bytes.ok()) {
      EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(ParseByteSizeTest, RejectsSizesThatOverflow) {
  EXPECT_FALSE(ParseByteSize("99999999999999999999G").ok());
}

// Every bad value is an error that names the flag, the value and the choices.
void ExpectFlagError(absl::string_view flag,
                     std::initializer_list<absl::string_view> mentions) {
  RematOptions options;
  absl::Status status = ApplyRematFlag(flag, options);
  ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << flag;
  for (absl::string_view text : mentions) {
    EXPECT_NE(status.message().find(text), absl::string_view::npos)
        << "'" << status.message() << "' lacks '" << text << "'";
  }
}

TEST(ApplyRematFlagTest, BadValuesNameFlagValueAndChoices) {
  ExpectFlagError(
      "--xla_rematerialization_algorithm=greedy",
      {"xla_rematerialization_algorithm", "greedy", "standard", "path", "xla"});
  ExpectFlagError("--xla_rematerialization_scheduler=random",
                  {"xla_rematerialization_scheduler", "random", "postorder"});
  ExpectFlagError("--xla_rematerialization_mem_limit=lots",
                  {"xla_rematerialization_mem_limit", "lots", "512M"});
  ExpectFlagError("--xla_rematerialization_mem_limit=1.5",
                  {"xla_rematerialization_mem_limit", "1.5",
                   "not a whole number of bytes", "0.5x"});
  ExpectFlagError("--xla_rematerialization_mem_limit=150%",
                  {"xla_rematerialization_mem_limit", "150%", "(0, 1]"});
  ExpectFlagError("--xla_rematerialization_mem_limit=50furlongs",
                  {"xla_rematerialization_mem_limit", "unknown suffix", "%"});
  ExpectFlagError("--xla_rematerialization_small_node_limit=-1",
                  {"xla_rematerialization_small_node_limit", "-1"});
  ExpectFlagError("--xla_use_hlo_rematerialization=maybe",
                  {"xla_use_hlo_rematerialization", "maybe", "true"});
}

TEST(ApplyRematFlagTest, ValuedFlagsNeedAValue) {
  ExpectFlagError("--xla_rematerialization_mem_limit",
                  {"xla_rematerialization_mem_limit", "needs a value"});
  ExpectFlagError("--xla_rematerialization_algorithm=",
                  {"xla_rematerialization_algorithm", "needs a value"});
}

TEST(ApplyRematFlagTest, OtherFlagsAreNotFound) {
  RematOptions options;
  EXPECT_TRUE(absl::IsNotFound(ApplyRematFlag("--xla_dump_to=/tmp", options)));
}

TEST(ApplyRematFlagTest, GoodValuesAreApplied) {
  RematOptions options;
  ASSERT_TRUE(ApplyRematFlagsFromString(
                  "--xla_dump_to=/tmp --xla_use_hlo_rematerialization "
                  "--xla_rematerialization_mem_limit=1.5GiB\t"
                  "--xla_rematerialization_algorithm=path "
                  "--xla_rematerialization_scheduler=dfs "
                  "--xla_rematerialization_small_node_limit=1",
                  options)
                  .ok());
  EXPECT_TRUE(options.enabled);
  EXPECT_EQ(options.memory_limit_bytes, int64_t{3} << 29);
  EXPECT_EQ(options.algorithm, RematAlgorithm::kPath);
  EXPECT_EQ(options.scheduler, RematScheduler::kDfs);
  EXPECT_EQ(options.small_node_limit_bytes(), int64_t{1} << 20);
}

// The budget's share of the module's memory has the forms remat-harness
// takes too: 0.5x, 50% and 0.5.
TEST(ApplyRematFlagTest, ShareOfTheMemoryInEveryForm) {
  for (absl::string_view form : {"0.5x", "0.5X", "50%", "0.5"}) {
    RematOptions options;
    ASSERT_TRUE(
        ApplyRematFlag(absl::StrCat("--xla_rematerialization_mem_limit=", form),
                       options)
            .ok())
        << form;
    EXPECT_DOUBLE_EQ(options.memory_limit_fraction, 0.5) << form;
    EXPECT_EQ(options.memory_limit_bytes, 0) << form;
  }
  RematOptions options;
  ASSERT_TRUE(
      ApplyRematFlag("--xla_rematerialization_mem_limit=20MB", options).ok());
  EXPECT_EQ(options.memory_limit_bytes, int64_t{20} << 20);
  EXPECT_EQ(options.memory_limit_fraction, 0);
}

// A bare 2 to 100 reads like a percentage: refused with both fixes; 0 and 1
// stay bytes (as low as the plan gets), and a B suffix makes it bytes.
TEST(ApplyRematFlagTest, ABareNumberThatReadsLikeAPercentageIsRefused) {
  ExpectFlagError("--xla_rematerialization_mem_limit=50",
                  {"xla_rematerialization_mem_limit", "not a budget", "0.5x",
                   "50%", "50B"});
  ExpectFlagError("--xla_rematerialization_mem_limit=2", {"2%", "2B"});
  for (absl::string_view bytes : {"0", "1", "101", "50B"}) {
    RematOptions options;
    EXPECT_TRUE(
        ApplyRematFlag(
            absl::StrCat("--xla_rematerialization_mem_limit=", bytes), options)
            .ok())
        << bytes;
    EXPECT_EQ(options.memory_limit_fraction, 0) << bytes;
  }
}

TEST(ResolveBudgetTest, SharesOfTheMemoryBeforeAndBytesAsThePassPlans) {
  EXPECT_EQ(*ResolveBudget("0.5x", 1000), 500);
  EXPECT_EQ(*ResolveBudget("50%", 1000), 500);
  EXPECT_EQ(*ResolveBudget("0.33", 3), 1);  // at least a byte: 0 is no share
  EXPECT_EQ(*ResolveBudget("1e-05", 1000000), 10);
  EXPECT_EQ(*ResolveBudget("512M", 1000), int64_t{512} << 20);
  EXPECT_EQ(*ResolveBudget("0", 1000), 0);
  EXPECT_EQ(ResolveBudget("lots", 1000).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ApplyRematFlagTest, FromStringStopsAtTheFirstBadValue) {
  RematOptions options;
  absl::Status status = ApplyRematFlagsFromString(
      "--xla_rematerialization_algorithm=greedy --xla_dump_to=x", options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace remat
}  // namespace xla
