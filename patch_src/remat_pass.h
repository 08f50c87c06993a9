// The rematerialization pass as the in-tree compilers run it: an
// HloModulePass around RunRemat (remat_driver.h), which the hlo-remat CLI
// calls directly to get the report.
#ifndef XLA_SERVICE_REMAT_REMAT_PASS_H_
#define XLA_SERVICE_REMAT_REMAT_PASS_H_

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/pass/hlo_pass_interface.h"
#include "xla/service/remat/remat_driver.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_report.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

class RematerializationPass : public HloModulePass {
 public:
  RematerializationPass(RematOptions options, SizeFunction size_fn,
                        const AliasInfo* alias_info = nullptr)
      : options_(std::move(options)),
        size_fn_(std::move(size_fn)),
        alias_info_(alias_info) {}
  // Distinct from XLA's own "rematerialization", which runs beside it.
  absl::string_view name() const override {
    return "rematerialization-planner";
  }
  const RematReport& last_report() const { return report_; }

 protected:
  absl::StatusOr<bool> RunImpl(
      HloModule* module,
      const absl::flat_hash_set<absl::string_view>& execution_threads) override;

 private:
  RematOptions options_;
  SizeFunction size_fn_;
  const AliasInfo* alias_info_;  // not owned; may be null
  RematReport report_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_PASS_H_
