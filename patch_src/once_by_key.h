// Values made once per key, by whichever caller claims the key first, while
// later callers wait for them: the judge's verdicts by plan signature
// (verdict_store.h) and the fused bodies' facts by body name (judging_copy.h),
// each shared by the frontier search's lanes.
#ifndef XLA_SERVICE_REMAT_ONCE_BY_KEY_H_
#define XLA_SERVICE_REMAT_ONCE_BY_KEY_H_

#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace xla {
namespace remat {

// Thread-safe. The claimer of a key makes its value without the lock and
// fills its slot; a maker's error is every caller's answer for that key.
template <typename V>
class OnceByKey {
 public:
  // Where one key's value lands; stays where it is while keys are added.
  class Slot {
   private:
    friend class OnceByKey;
    bool filled = false;
    absl::StatusOr<V> value;
  };

  // The slot of `key`, and whether this call claimed it: the claimer must
  // Fill it, or every Await of it waits for ever.
  std::pair<Slot*, bool> Claim(const std::string& key) {
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = slots_.try_emplace(key);
    return {&it->second, inserted};
  }
  void Fill(Slot* slot, absl::StatusOr<V> value) {
    absl::MutexLock lock(&mu_);
    slot->value = std::move(value);
    slot->filled = true;
  }
  // The slot's value once it is filled; it does not change after.
  const absl::StatusOr<V>& Await(Slot* slot) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&slot->filled));
    return slot->value;
  }

  // Keys claimed so far.
  int size() const {
    absl::MutexLock lock(&mu_);
    return slots_.size();
  }

 private:
  mutable absl::Mutex mu_;
  absl::node_hash_map<std::string, Slot> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_ONCE_BY_KEY_H_
