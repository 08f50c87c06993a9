#include "xla/service/remat/once_by_key.h"

#include <gtest/gtest.h>

#include <thread>  // NOLINT(build/c++11): a claimer and a waiter at once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace xla {
namespace remat {
namespace {

TEST(OnceByKeyTest, TheFirstCallerClaimsAKeyAndLaterOnesFindItsSlot) {
  OnceByKey<int> values;
  auto [slot, claimed] = values.Claim("a");
  EXPECT_TRUE(claimed);
  values.Fill(slot, 7);
  auto [again, claimed_again] = values.Claim("a");
  EXPECT_FALSE(claimed_again);
  EXPECT_EQ(again, slot);
  EXPECT_EQ(*values.Await(again), 7);
  EXPECT_TRUE(values.Claim("b").second);
  EXPECT_EQ(values.size(), 2);
}

TEST(OnceByKeyTest, AWaiterGetsTheValueTheClaimerFillsLater) {
  OnceByKey<int> values;
  auto [slot, claimed] = values.Claim("a");
  ASSERT_TRUE(claimed);
  absl::StatusOr<int> seen = absl::UnknownError("not awaited");
  std::thread waiter([&] { seen = values.Await(values.Claim("a").first); });
  absl::SleepFor(absl::Milliseconds(20));
  values.Fill(slot, 3);
  waiter.join();
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*seen, 3);
}

TEST(OnceByKeyTest, AMakersErrorIsEveryCallersAnswer) {
  OnceByKey<int> values;
  values.Fill(values.Claim("a").first, absl::InternalError("broken"));
  EXPECT_EQ(values.Await(values.Claim("a").first).status().message(), "broken");
}

}  // namespace
}  // namespace remat
}  // namespace xla
