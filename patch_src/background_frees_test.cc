#include "xla/service/remat/background_frees.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace xla {
namespace remat {
namespace {

// Counts its destructions, each after `release` is notified (or ten
// seconds have passed: a Free that freed in place then fails the test
// instead of hanging it).
struct Held {
  Held(std::atomic<int>& freed, absl::Notification* release)
      : freed(freed), release(release) {}
  ~Held() {
    if (release != nullptr) {
      release->WaitForNotificationWithTimeout(absl::Seconds(10));
    }
    ++freed;
  }
  std::atomic<int>& freed;
  absl::Notification* release;
};

TEST(BackgroundFreesTest, FreeReturnsBeforeTheObjectIsFreed) {
  std::atomic<int> freed = 0;
  absl::Notification release;
  {
    BackgroundFrees frees;
    frees.Free(std::make_unique<Held>(freed, &release));
    // The destructor waits for `release`: had Free run it, it would have
    // counted by now.
    EXPECT_EQ(freed.load(), 0);
    release.Notify();
  }
  EXPECT_EQ(freed.load(), 1);
}

TEST(BackgroundFreesTest, EveryObjectIsFreedWhenTheFreesAreDestroyed) {
  std::atomic<int> freed = 0;
  {
    BackgroundFrees frees;
    for (int i = 0; i < 8; ++i) {
      frees.Free(std::make_unique<Held>(freed, nullptr));
    }
    frees.Free(std::unique_ptr<Held>());  // nothing to free
  }
  EXPECT_EQ(freed.load(), 8);
}

}  // namespace
}  // namespace remat
}  // namespace xla
