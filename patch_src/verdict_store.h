// The judge's verdicts by the signature of the plan judged (plan_signature.h),
// shared by every planner of one frontier search: a plan one planner's
// search judged is not judged again by another's.
#ifndef XLA_SERVICE_REMAT_VERDICT_STORE_H_
#define XLA_SERVICE_REMAT_VERDICT_STORE_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "xla/service/remat/once_by_key.h"
#include "xla/service/remat/planner_types.h"

namespace xla {
namespace remat {

// Thread-safe. A signature being judged is waited for, not judged twice:
// the judgements made are the signatures the searches ask of, once each,
// whichever planner asks first, so their number does not depend on timing.
// (Planners whose modules list the computation's instructions in different
// orders sign one plan differently: more judgements, the same verdicts.)
class VerdictStore {
 public:
  struct Answer {
    PlanVerdict verdict;
    bool judged_here = false;  // this call ran the judge
  };

  // The verdict of `signature`: known, waited for while another caller
  // judges it, or judged now by `judge` (called without the lock). A
  // judge's error is every caller's answer for that signature.
  absl::StatusOr<Answer> VerdictOf(
      const std::string& signature,
      absl::FunctionRef<absl::StatusOr<PlanVerdict>()> judge);

 private:
  OnceByKey<PlanVerdict> verdicts_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_VERDICT_STORE_H_
