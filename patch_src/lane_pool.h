// Tasks run by a few lanes and by the caller at once, each task by whoever
// is free first, their results taken in order as they are made: the
// frontier search plans its aims this way (frontier_points.cc), each lane a
// planner on its own copy of the module, the caller too between the raises
// of the aims already planned.
#ifndef XLA_SERVICE_REMAT_LANE_POOL_H_
#define XLA_SERVICE_REMAT_LANE_POOL_H_

#include <chrono>  // NOLINT(build/c++11): each lane's busy time
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "xla/tsl/platform/env.h"
#include "xla/tsl/platform/threadpool.h"

namespace xla {
namespace remat {

// Tasks 0 .. count - 1, started in the order `order` gives (a permutation
// of them; empty: 0 first) by `lanes` threads and by the caller (Claim),
// each by whichever is free first: which worker runs a task
// depends on timing, so a task's result must depend on the task alone, not
// on the worker or on what the worker ran before. Each lane makes its
// worker once, in its own thread; a lane whose worker cannot be made runs
// nothing and leaves its tasks to the others. Claim and Take wait for every
// lane's worker to be made: what the workers are made from may be written
// once either has returned. A lane done with its tasks hands its worker to
// `retire`, if given, in its own thread: what a worker holds is freed there
// while the caller and the other lanes go on.
template <typename Worker, typename Result>
class LanePool {
 public:
  using MakeWorker = std::function<absl::StatusOr<Worker>()>;
  using RunTask = std::function<absl::StatusOr<Result>(Worker&, int task)>;
  using RetireWorker = std::function<void(int lane, Worker&)>;

  // What the lanes leave: each lane's worker, or why it could not be made,
  // and the seconds the lane worked.
  struct Finished {
    std::vector<absl::StatusOr<Worker>> workers;
    std::vector<double> busy_seconds;
  };

  LanePool(int lanes, int count, MakeWorker make, RunTask run,
           RetireWorker retire = nullptr, std::vector<int> order = {})
      : lanes_(lanes),
        count_(count),
        order_(std::move(order)),
        make_(std::move(make)),
        run_(std::move(run)),
        retire_(std::move(retire)),
        results_(count),
        busy_seconds_(lanes, 0) {
    for (int lane = 0; lane < lanes; ++lane) {
      workers_.emplace_back(absl::CancelledError("the lane did not start"));
    }
    if (lanes_ == 0) return;
    pool_ = std::make_unique<tsl::thread::ThreadPool>(tsl::Env::Default(),
                                                      "remat_lanes", lanes);
    for (int lane = 0; lane < lanes; ++lane) {
      pool_->Schedule([this, lane] { RunLane(lane); });
    }
  }
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;
  // The lanes stop after the task in hand (a caller that returns early, on
  // an error, does not wait for the tasks it will not take).
  ~LanePool() {
    {
      absl::MutexLock lock(&mu_);
      stopped_ = true;
    }
    pool_.reset();
  }

  // The next task no one has started, for the caller to run on a worker of
  // its own and Give back; none when every task is started.
  std::optional<int> Claim() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &LanePool::AllWorkersMade));
    if (next_ == count_) return std::nullopt;
    return TaskAt(next_++);
  }

  // The result of a task the caller claimed.
  void Give(int task, absl::StatusOr<Result> result) {
    absl::MutexLock lock(&mu_);
    results_[task] = std::move(result);
  }

  // Whether task `task`'s result is in (and not taken).
  bool Done(int task) {
    absl::MutexLock lock(&mu_);
    return results_[task].has_value();
  }

  // Task `task`'s result, once, when it is made. The caller must not wait
  // for a task it claimed and has not given.
  absl::StatusOr<Result> Take(int task) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return AllWorkersMade() && results_[task].has_value();
    };
    mu_.Await(absl::Condition(&ready));
    absl::StatusOr<Result> result = *std::move(results_[task]);
    results_[task].reset();
    return result;
  }

  // Waits for every lane to finish its tasks.
  Finished Finish() {
    pool_.reset();
    return Finished{std::move(workers_), std::move(busy_seconds_)};
  }

 private:
  int TaskAt(int position) const {
    return order_.empty() ? position : order_[position];
  }
  bool AllWorkersMade() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return workers_made_ == lanes_;
  }

  void RunLane(int lane) {
    const auto started = std::chrono::steady_clock::now();
    absl::StatusOr<Worker> worker = make_();
    {
      absl::MutexLock lock(&mu_);
      ++workers_made_;
    }
    while (worker.ok()) {
      int task = 0;
      {
        absl::MutexLock lock(&mu_);
        if (stopped_ || next_ == count_) break;
        task = TaskAt(next_++);
      }
      absl::StatusOr<Result> result = run_(*worker, task);
      absl::MutexLock lock(&mu_);
      results_[task] = std::move(result);
    }
    // Each lane writes only its own entries, read after the pool is gone.
    busy_seconds_[lane] = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - started)
                              .count();
    if (worker.ok() && retire_ != nullptr) retire_(lane, *worker);
    workers_[lane] = std::move(worker);
  }

  const int lanes_;
  const int count_;
  const std::vector<int> order_;
  const MakeWorker make_;
  const RunTask run_;
  const RetireWorker retire_;
  absl::Mutex mu_;
  std::vector<std::optional<absl::StatusOr<Result>>> results_
      ABSL_GUARDED_BY(mu_);
  int workers_made_ ABSL_GUARDED_BY(mu_) = 0;
  // The position in the order of the next task no one has started.
  int next_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<absl::StatusOr<Worker>> workers_;
  std::vector<double> busy_seconds_;
  // Last: its threads use everything above.
  std::unique_ptr<tsl::thread::ThreadPool> pool_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_LANE_POOL_H_
