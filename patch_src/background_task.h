// A function of the module run in a thread of its own while the pass goes
// on: the checks of the buffer sharing read the module while the pass
// measures it or verifies it, serial phases that leave a core idle.
#ifndef XLA_SERVICE_REMAT_BACKGROUND_TASK_H_
#define XLA_SERVICE_REMAT_BACKGROUND_TASK_H_

#include <memory>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "xla/tsl/platform/env.h"

namespace xla {
namespace remat {

// Starts `run` at once. What `run` reads must not be written until Wait
// returns or the task is destroyed (the destructor waits too).
template <typename T>
class BackgroundTask {
 public:
  explicit BackgroundTask(absl::AnyInvocable<absl::StatusOr<T>()> run) {
    // Held shared: the function a thread runs may have to be copyable.
    auto held = std::make_shared<absl::AnyInvocable<absl::StatusOr<T>()>>(
        std::move(run));
    thread_.reset(tsl::Env::Default()->StartThread(
        tsl::ThreadOptions(), "remat_task",
        [this, held]() { result_ = (*held)(); }));
  }
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;
  // tsl::Thread's destructor joins.
  ~BackgroundTask() { thread_.reset(); }

  // What `run` returned, once it has.
  const absl::StatusOr<T>& Wait() {
    thread_.reset();
    return result_;
  }

 private:
  absl::StatusOr<T> result_ = absl::InternalError("the task has not run");
  // Last: the thread writes result_.
  std::unique_ptr<tsl::Thread> thread_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_BACKGROUND_TASK_H_
