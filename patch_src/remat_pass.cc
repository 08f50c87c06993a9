#include "xla/service/remat/remat_pass.h"

#include "absl/container/flat_hash_set.h"
#include "absl/log/log.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/remat_driver.h"
#include "xla/service/remat/remat_options.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

absl::StatusOr<bool> RematerializationPass::RunImpl(
    HloModule* module, const absl::flat_hash_set<absl::string_view>&) {
  if (!options_.enabled) return false;
  RematOptions options = options_;
  if (options.dump_dir.empty()) {
    options.dump_dir = module->config().debug_options().xla_dump_to();
  }
  TF_ASSIGN_OR_RETURN(report_,
                      RunRemat(module, options, size_fn_, alias_info_));
  LOG(INFO) << "rematerialization (" << report_.algorithm << ") on "
            << module->name() << ": peak " << report_.heap_sim_before_bytes
            << " -> " << report_.heap_sim_after_bytes << " bytes, budget "
            << report_.budget_bytes << (report_.budget_met ? " met" : " missed")
            << ", " << report_.instructions_added << " instructions added";
  VLOG(1) << report_.ToJson();
  // A new order alone (readers hoisted, no plan kept) changes the module.
  return report_.instructions_added > 0 || report_.rescheduled ||
         report_.invariant_stacks_removed > 0 || report_.hoisted > 0;
}

}  // namespace remat
}  // namespace xla
