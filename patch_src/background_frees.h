// Objects freed in threads of their own while their owner goes on: the
// frontier search's copies of the module (about a second each to free on
// DenseNet-121's CPU step), freed while the pass makes the chosen plan
// again, verifies it and measures it, instead of on the pass's way.
#ifndef XLA_SERVICE_REMAT_BACKGROUND_FREES_H_
#define XLA_SERVICE_REMAT_BACKGROUND_FREES_H_

#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "xla/tsl/platform/env.h"

namespace xla {
namespace remat {

// Free may be called from several threads at once. Every object handed to
// it is freed by the time this is destroyed: the destructor waits.
class BackgroundFrees {
 public:
  BackgroundFrees() = default;
  BackgroundFrees(const BackgroundFrees&) = delete;
  BackgroundFrees& operator=(const BackgroundFrees&) = delete;
  // Joins every thread (tsl::Thread's destructor waits for it), after the
  // lock is let go: a Free still running would wait on it.
  ~BackgroundFrees() {
    std::vector<std::unique_ptr<tsl::Thread>> threads;
    {
      absl::MutexLock lock(&mu_);
      threads = std::move(threads_);
    }
  }

  // Frees `object` in a thread of its own; returns at once.
  template <typename T>
  void Free(std::unique_ptr<T> object) {
    if (object == nullptr) return;
    // Held shared, once: the function a thread runs may have to be copyable.
    std::unique_ptr<tsl::Thread> thread(tsl::Env::Default()->StartThread(
        tsl::ThreadOptions(), "remat_free",
        [held = std::shared_ptr<T>(std::move(object))]() mutable {
          held.reset();
        }));
    absl::MutexLock lock(&mu_);
    threads_.push_back(std::move(thread));
  }

 private:
  absl::Mutex mu_;
  std::vector<std::unique_ptr<tsl::Thread>> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_BACKGROUND_FREES_H_
