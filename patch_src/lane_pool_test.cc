#include "xla/service/remat/lane_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace xla {
namespace remat {
namespace {

// A worker that says which tasks it ran.
struct Tally {
  std::vector<int> tasks;
};

// Runs every task: the caller claims tasks until task `i` is in, as the
// frontier search does, and returns the tasks it ran itself.
std::vector<int> TakeAll(LanePool<Tally, std::string>& pool, int count,
                         std::vector<std::string>& results) {
  std::vector<int> mine;
  for (int i = 0; i < count; ++i) {
    while (!pool.Done(i)) {
      const std::optional<int> task = pool.Claim();
      if (!task.has_value()) break;
      mine.push_back(*task);
      pool.Give(*task, absl::StrCat("task ", *task, " by the caller"));
    }
    absl::StatusOr<std::string> result = pool.Take(i);
    EXPECT_TRUE(result.ok()) << result.status();
    results.push_back(result.ok() ? *result : "");
  }
  return mine;
}

TEST(LanePoolTest, EveryTaskRunsOnceAndIsTakenInOrder) {
  constexpr int kTasks = 40;
  LanePool<Tally, std::string> pool(
      3, kTasks, []() -> absl::StatusOr<Tally> { return Tally{}; },
      [](Tally& tally, int task) -> absl::StatusOr<std::string> {
        tally.tasks.push_back(task);
        absl::SleepFor(absl::Microseconds(200 * (task % 3)));
        return absl::StrCat("task ", task);
      });
  std::vector<std::string> results;
  std::vector<int> ran = TakeAll(pool, kTasks, results);
  auto finished = pool.Finish();
  ASSERT_EQ(finished.workers.size(), 3);
  for (int lane = 0; lane < 3; ++lane) {
    ASSERT_TRUE(finished.workers[lane].ok());
    const std::vector<int>& tasks = finished.workers[lane]->tasks;
    // Each worker starts its tasks in their order.
    EXPECT_TRUE(std::is_sorted(tasks.begin(), tasks.end()));
    ran.insert(ran.end(), tasks.begin(), tasks.end());
    EXPECT_GE(finished.busy_seconds[lane], 0);
  }
  std::sort(ran.begin(), ran.end());
  std::vector<int> all(kTasks);
  for (int task = 0; task < kTasks; ++task) all[task] = task;
  EXPECT_EQ(ran, all);
  for (int task = 0; task < kTasks; ++task) {
    EXPECT_TRUE(results[task] == absl::StrCat("task ", task) ||
                results[task] == absl::StrCat("task ", task, " by the caller"))
        << results[task];
  }
}

// Each lane hands its worker to `retire` once, in its own thread, after its
// last task: what the worker holds is freed before Finish.
TEST(LanePoolTest, EachLaneRetiresItsWorkerAfterItsLastTask) {
  constexpr int kTasks = 12;
  std::vector<int> retired_tasks(2, -1);
  std::atomic<int> retirements{0};
  LanePool<Tally, std::string> pool(
      2, kTasks, []() -> absl::StatusOr<Tally> { return Tally{}; },
      [](Tally& tally, int task) -> absl::StatusOr<std::string> {
        tally.tasks.push_back(task);
        absl::SleepFor(absl::Microseconds(300));
        return absl::StrCat("task ", task);
      },
      [&](int lane, Tally& tally) {
        ++retirements;
        retired_tasks[lane] = tally.tasks.size();
        tally.tasks.clear();
      });
  std::vector<std::string> results;
  const int by_caller = TakeAll(pool, kTasks, results).size();
  auto finished = pool.Finish();
  EXPECT_EQ(retirements.load(), 2);
  for (int lane = 0; lane < 2; ++lane) {
    ASSERT_TRUE(finished.workers[lane].ok());
    EXPECT_TRUE(finished.workers[lane]->tasks.empty());  // retired after all
  }
  EXPECT_EQ(retired_tasks[0] + retired_tasks[1] + by_caller, kTasks);
}

// With no lane the caller runs every task, in order: the search with one
// planner.
TEST(LanePoolTest, WithNoLaneTheCallerRunsEveryTask) {
  LanePool<Tally, std::string> pool(
      0, 5, []() -> absl::StatusOr<Tally> { return Tally{}; },
      [](Tally&, int) -> absl::StatusOr<std::string> {
        return absl::InternalError("no lane runs a task");
      });
  std::vector<std::string> results;
  EXPECT_EQ(TakeAll(pool, 5, results), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(results[4], "task 4 by the caller");
  EXPECT_TRUE(pool.Finish().workers.empty());
}

// Tasks start in the order given (the frontier starts its longest aims
// first), and are still taken by their number.
TEST(LanePoolTest, TasksStartInTheOrderGivenAndAreTakenByNumber) {
  const std::vector<int> lowest_first = {4, 3, 2, 1, 0};
  LanePool<Tally, std::string> alone(
      0, 5, []() -> absl::StatusOr<Tally> { return Tally{}; },
      [](Tally&, int) -> absl::StatusOr<std::string> {
        return absl::InternalError("no lane runs a task");
      },
      nullptr, lowest_first);
  std::vector<std::string> results;
  EXPECT_EQ(TakeAll(alone, 5, results), lowest_first);
  EXPECT_EQ(results[0], "task 0 by the caller");
  alone.Finish();

  constexpr int kTasks = 30;
  std::vector<int> reversed(kTasks);
  for (int i = 0; i < kTasks; ++i) reversed[i] = kTasks - 1 - i;
  LanePool<Tally, std::string> lanes(
      2, kTasks, []() -> absl::StatusOr<Tally> { return Tally{}; },
      [](Tally& tally, int task) -> absl::StatusOr<std::string> {
        tally.tasks.push_back(task);
        absl::SleepFor(absl::Microseconds(100 * (task % 4)));
        return absl::StrCat("task ", task);
      },
      nullptr, reversed);
  results.clear();
  const std::vector<int> by_caller = TakeAll(lanes, kTasks, results);
  EXPECT_TRUE(std::is_sorted(by_caller.rbegin(), by_caller.rend()));
  auto finished = lanes.Finish();
  int ran = by_caller.size();
  for (auto& worker : finished.workers) {
    ASSERT_TRUE(worker.ok());
    EXPECT_TRUE(std::is_sorted(worker->tasks.rbegin(), worker->tasks.rend()));
    ran += worker->tasks.size();
  }
  EXPECT_EQ(ran, kTasks);
  for (int task = 0; task < kTasks; ++task) {
    EXPECT_TRUE(absl::StartsWith(results[task], absl::StrCat("task ", task)))
        << results[task];
  }
}

// A lane whose worker is not made runs nothing; the others (and the
// caller) run its share, and Finish says why it failed.
TEST(LanePoolTest, AWorkerNotMadeLeavesItsTasksToTheOthers) {
  std::atomic<int> made{0};
  LanePool<Tally, std::string> pool(
      2, 6,
      [&]() -> absl::StatusOr<Tally> {
        if (made++ == 0) return absl::InternalError("no copy");
        return Tally{};
      },
      [](Tally& tally, int task) -> absl::StatusOr<std::string> {
        tally.tasks.push_back(task);
        return absl::StrCat("task ", task);
      });
  std::vector<std::string> results;
  TakeAll(pool, 6, results);
  auto finished = pool.Finish();
  int failed = 0;
  for (const auto& worker : finished.workers) {
    if (worker.ok()) continue;
    EXPECT_EQ(worker.status().message(), "no copy");
    ++failed;
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(results.size(), 6);
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
