#include "xla/service/remat/remat_flags.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/base/no_destructor.h"
#include "absl/base/thread_annotations.h"
#include "absl/log/log.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "xla/service/remat/remat_flag_table.h"
#include "xla/service/remat/remat_options.h"

namespace xla {
namespace remat {
namespace {

absl::Mutex& OptionsMutex() {
  static absl::NoDestructor<absl::Mutex> mutex;
  return *mutex;
}

RematOptions& GlobalOptions() ABSL_EXCLUSIVE_LOCKS_REQUIRED(OptionsMutex()) {
  static absl::NoDestructor<RematOptions> options;
  return *options;
}

bool Apply(const std::string& flag) {
  absl::MutexLock lock(&OptionsMutex());
  absl::Status status = ApplyRematFlag(flag, GlobalOptions());
  if (!status.ok()) {
    LOG(ERROR) << "XLA_FLAGS: " << status.message();
    return false;
  }
  return true;
}

}  // namespace

void AppendRematFlags(std::vector<tsl::Flag>* flag_list) {
  // tsl::Flag keeps the name pointer: the table lives as long as the process.
  for (const RematFlag& flag : RematFlagTable()) {
    const std::string& name = flag.name;
    if (flag.is_switch()) {
      flag_list->push_back(tsl::Flag(
          name.c_str(), std::function<bool(bool)>([&name](bool on) {
            return Apply(absl::StrCat("--", name, "=", on ? "true" : "false"));
          }),
          false, flag.help));
    } else {
      flag_list->push_back(tsl::Flag(
          name.c_str(),
          std::function<bool(std::string)>([&name](std::string value) {
            return Apply(absl::StrCat("--", name, "=", value));
          }),
          "", flag.help));
    }
  }
}

// In-tree, the patch names its sources' revision (scripts/make_patch.py):
// what a kept frontier (frontier_cache.h) must be of.
#define REMAT_STRINGIFY_VALUE(x) #x
#define REMAT_STRINGIFY(x) REMAT_STRINGIFY_VALUE(x)

RematOptions CurrentRematOptions() {
  RematOptions options;
  {
    absl::MutexLock lock(&OptionsMutex());
    options = GlobalOptions();
  }
#ifdef REMAT_ENGINE_REVISION
  options.engine_revision = REMAT_STRINGIFY(REMAT_ENGINE_REVISION);
#endif
  return options;
}

}  // namespace remat
}  // namespace xla
