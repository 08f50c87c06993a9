#include "xla/service/remat/verdict_store.h"

#include <string>
#include <utility>

namespace xla {
namespace remat {

absl::StatusOr<VerdictStore::Answer> VerdictStore::VerdictOf(
    const std::string& signature,
    absl::FunctionRef<absl::StatusOr<PlanVerdict>()> judge) {
  Entry* entry = nullptr;
  {
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = entries_.try_emplace(signature);
    entry = &it->second;
    if (!inserted) {
      mu_.Await(absl::Condition(&entry->done));
      if (!entry->verdict.ok()) return entry->verdict.status();
      return Answer{*entry->verdict, /*judged_here=*/false};
    }
  }
  absl::StatusOr<PlanVerdict> verdict = judge();
  absl::MutexLock lock(&mu_);
  entry->verdict = verdict;
  entry->done = true;
  if (!verdict.ok()) return verdict.status();
  return Answer{*std::move(verdict), /*judged_here=*/true};
}

}  // namespace remat
}  // namespace xla
