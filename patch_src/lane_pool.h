// Tasks run by a few lanes at once, their results taken in order as they
// are made: the frontier search plans its aims this way (remat_planner.cc),
// each lane a planner on its own copy of the module, while the caller
// raises the aims already planned.
#ifndef XLA_SERVICE_REMAT_LANE_POOL_H_
#define XLA_SERVICE_REMAT_LANE_POOL_H_

#include <chrono>  // NOLINT(build/c++11): each lane's busy time
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "xla/tsl/platform/env.h"
#include "xla/tsl/platform/threadpool.h"

namespace xla {
namespace remat {

// Tasks 0 .. count - 1 on `lanes` threads: lane k makes its worker once, in
// its own thread, then runs tasks k, k + lanes, ... in that order. So which
// worker runs a task depends on the lanes alone, never on timing. Take
// waits for a task's result and for every lane's worker to be made: what
// the workers are made from may be written once a Take has returned.
template <typename Worker, typename Result>
class LanePool {
 public:
  using MakeWorker = std::function<absl::StatusOr<Worker>()>;
  using RunTask = std::function<absl::StatusOr<Result>(Worker&, int task)>;

  // What the lanes leave: each lane's worker (none where it could not be
  // made) and the seconds the lane worked.
  struct Finished {
    std::vector<std::optional<Worker>> workers;
    std::vector<double> busy_seconds;
  };

  LanePool(int lanes, int count, MakeWorker make, RunTask run)
      : lanes_(lanes),
        count_(count),
        make_(std::move(make)),
        run_(std::move(run)),
        results_(count),
        workers_(lanes),
        busy_seconds_(lanes, 0) {
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

  // Task `task`'s result, once, when it is made.
  absl::StatusOr<Result> Take(int task) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return workers_made_ == lanes_ && results_[task].has_value();
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
  void RunLane(int lane) {
    const auto started = std::chrono::steady_clock::now();
    absl::StatusOr<Worker> worker = make_();
    {
      absl::MutexLock lock(&mu_);
      ++workers_made_;
    }
    for (int task = lane; task < count_; task += lanes_) {
      {
        absl::MutexLock lock(&mu_);
        if (stopped_) break;
      }
      absl::StatusOr<Result> result =
          worker.ok() ? run_(*worker, task)
                      : absl::StatusOr<Result>(worker.status());
      absl::MutexLock lock(&mu_);
      results_[task] = std::move(result);
    }
    // Each lane writes only its own entries, read after the pool is gone.
    busy_seconds_[lane] = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - started)
                              .count();
    if (worker.ok()) workers_[lane] = *std::move(worker);
  }

  const int lanes_;
  const int count_;
  const MakeWorker make_;
  const RunTask run_;
  absl::Mutex mu_;
  std::vector<std::optional<absl::StatusOr<Result>>> results_
      ABSL_GUARDED_BY(mu_);
  int workers_made_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::optional<Worker>> workers_;
  std::vector<double> busy_seconds_;
  // Last: its threads use everything above.
  std::unique_ptr<tsl::thread::ThreadPool> pool_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_LANE_POOL_H_
