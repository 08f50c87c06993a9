#include "xla/service/remat/background_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace xla {
namespace remat {
namespace {

TEST(BackgroundTaskTest, RunsWhileTheCallerGoesOnAndWaitGivesItsResult) {
  absl::Notification caller_went_on;
  BackgroundTask<std::string> task([&]() -> absl::StatusOr<std::string> {
    // Ten seconds at most: a task run in place would fail, not hang.
    if (!caller_went_on.WaitForNotificationWithTimeout(absl::Seconds(10))) {
      return absl::DeadlineExceededError("ran before the caller went on");
    }
    return std::string("done");
  });
  caller_went_on.Notify();
  ASSERT_TRUE(task.Wait().ok()) << task.Wait().status();
  EXPECT_EQ(*task.Wait(), "done");
}

TEST(BackgroundTaskTest, AnErrorIsTheResult) {
  BackgroundTask<int> task(
      []() -> absl::StatusOr<int> { return absl::InternalError("broken"); });
  EXPECT_EQ(task.Wait().status().message(), "broken");
}

TEST(BackgroundTaskTest, TheDestructorWaitsForTheTask) {
  std::atomic<bool> finished = false;
  {
    BackgroundTask<int> task([&]() -> absl::StatusOr<int> {
      absl::SleepFor(absl::Milliseconds(50));
      finished = true;
      return 1;
    });
  }
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace remat
}  // namespace xla
