#include "xla/service/remat/verdict_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>  // NOLINT(build/c++11): callers at once
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace xla {
namespace remat {
namespace {

TEST(VerdictStoreTest, ASignatureIsJudgedOnceAndKnownAfter) {
  VerdictStore store;
  int judged = 0;
  auto judge = [&]() -> absl::StatusOr<PlanVerdict> {
    ++judged;
    return PlanVerdict{true, 100 + judged, ""};
  };
  absl::StatusOr<VerdictStore::Answer> first = store.VerdictOf("a", judge);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->judged_here);
  EXPECT_EQ(first->verdict.simulated_peak, 101);
  absl::StatusOr<VerdictStore::Answer> again = store.VerdictOf("a", judge);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->judged_here);
  EXPECT_EQ(again->verdict.simulated_peak, 101);
  absl::StatusOr<VerdictStore::Answer> other = store.VerdictOf("b", judge);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(other->judged_here);
  EXPECT_EQ(judged, 2);
}

// Callers asking at once of the same plans judge each once: the count of
// judgements does not depend on which caller came first.
TEST(VerdictStoreTest, CallersAtOnceWaitForTheJudgementInHand) {
  VerdictStore store;
  std::atomic<int> judged{0};
  std::atomic<int> judged_here{0};
  std::vector<std::thread> callers;
  for (int caller = 0; caller < 4; ++caller) {
    callers.emplace_back([&] {
      for (int plan = 0; plan < 10; ++plan) {
        absl::StatusOr<VerdictStore::Answer> answer = store.VerdictOf(
            absl::StrCat("plan ", plan), [&]() -> absl::StatusOr<PlanVerdict> {
              ++judged;
              absl::SleepFor(absl::Milliseconds(2));
              return PlanVerdict{true, plan, ""};
            });
        ASSERT_TRUE(answer.ok()) << answer.status();
        EXPECT_EQ(answer->verdict.simulated_peak, plan);
        if (answer->judged_here) ++judged_here;
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(judged.load(), 10);
  EXPECT_EQ(judged_here.load(), 10);
}

TEST(VerdictStoreTest, AJudgesErrorIsTheAnswerForItsSignature) {
  VerdictStore store;
  auto failing = []() -> absl::StatusOr<PlanVerdict> {
    return absl::InternalError("simulator failed");
  };
  EXPECT_EQ(store.VerdictOf("a", failing).status().message(),
            "simulator failed");
  auto fine = []() -> absl::StatusOr<PlanVerdict> { return PlanVerdict{}; };
  EXPECT_EQ(store.VerdictOf("a", fine).status().message(), "simulator failed");
  EXPECT_TRUE(store.VerdictOf("b", fine).ok());
}

}  // namespace
}  // namespace remat
}  // namespace xla
