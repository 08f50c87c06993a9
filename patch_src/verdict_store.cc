#include "xla/service/remat/verdict_store.h"

#include <string>

namespace xla {
namespace remat {

absl::StatusOr<VerdictStore::Answer> VerdictStore::VerdictOf(
    const std::string& signature,
    absl::FunctionRef<absl::StatusOr<PlanVerdict>()> judge) {
  auto [slot, claimed] = verdicts_.Claim(signature);
  if (claimed) verdicts_.Fill(slot, judge());
  const absl::StatusOr<PlanVerdict>& verdict = verdicts_.Await(slot);
  if (!verdict.ok()) return verdict.status();
  return Answer{*verdict, /*judged_here=*/claimed};
}

}  // namespace remat
}  // namespace xla
