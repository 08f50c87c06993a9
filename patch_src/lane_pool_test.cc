#include "xla/service/remat/lane_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace xla {
namespace remat {
namespace {

// A worker that says which lane made it and which tasks it ran.
struct Tally {
  int lane = 0;
  std::vector<int> tasks;
};

TEST(LanePoolTest, LaneKRunsTasksKPlusMultiplesOfTheLanesInOrder) {
  std::atomic<int> made{0};
  LanePool<Tally, std::string> pool(
      3, 8, [&]() -> absl::StatusOr<Tally> { return Tally{made++, {}}; },
      [](Tally& tally, int task) -> absl::StatusOr<std::string> {
        tally.tasks.push_back(task);
        return absl::StrCat("task ", task);
      });
  for (int task = 0; task < 8; ++task) {
    absl::StatusOr<std::string> result = pool.Take(task);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(*result, absl::StrCat("task ", task));
  }
  auto finished = pool.Finish();
  ASSERT_EQ(finished.workers.size(), 3);
  std::vector<std::vector<int>> runs;
  for (const auto& worker : finished.workers) {
    ASSERT_TRUE(worker.has_value());
    runs.push_back(worker->tasks);
  }
  // Which worker is which lane is the threads' order; what each ran is not.
  std::sort(runs.begin(), runs.end());
  EXPECT_EQ(runs,
            (std::vector<std::vector<int>>{{0, 3, 6}, {1, 4, 7}, {2, 5}}));
  for (double seconds : finished.busy_seconds) EXPECT_GE(seconds, 0);
}

TEST(LanePoolTest, AWorkerNotMadeFailsItsLanesTasksOnly) {
  std::atomic<int> made{0};
  LanePool<int, int> pool(
      2, 4,
      [&]() -> absl::StatusOr<int> {
        if (made++ == 0) return absl::InternalError("no copy");
        return 7;
      },
      [](int& worker, int task) -> absl::StatusOr<int> {
        return worker + task;
      });
  int failed = 0;
  for (int task = 0; task < 4; ++task) {
    absl::StatusOr<int> result = pool.Take(task);
    if (result.ok()) {
      EXPECT_EQ(*result, 7 + task);
    } else {
      EXPECT_EQ(result.status().message(), "no copy");
      ++failed;
    }
  }
  EXPECT_EQ(failed, 2);  // one lane's two tasks
}

// A caller that returns early (on an error) does not wait for the tasks it
// will not take: 10000 tasks of a millisecond would keep two lanes 5 s.
TEST(LanePoolTest, APoolLeftEarlyStopsItsLanesAfterTheirTaskInHand) {
  std::atomic<int> ran{0};
  {
    LanePool<int, int> pool(
        2, 10000, []() -> absl::StatusOr<int> { return 0; },
        [&](int&, int task) -> absl::StatusOr<int> {
          ++ran;
          absl::SleepFor(absl::Milliseconds(1));
          return task;
        });
    ASSERT_TRUE(pool.Take(0).ok());
  }
  const int after_the_pool = ran.load();
  EXPECT_GE(after_the_pool, 1);
  EXPECT_LT(after_the_pool, 5000);
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(ran.load(), after_the_pool);  // nothing runs past the pool
}

}  // namespace
}  // namespace remat
}  // namespace xla
