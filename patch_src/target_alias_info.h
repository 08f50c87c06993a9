// The target's AliasInfo (GPU: GpuAliasInfo), or XLA's default AliasInfo when
// the caller has none (the CLI on CPU modules, tests).
//
// Declare it before the analyses that read it: it owns the default, which
// must outlive them.
#ifndef XLA_SERVICE_REMAT_TARGET_ALIAS_INFO_H_
#define XLA_SERVICE_REMAT_TARGET_ALIAS_INFO_H_

#include "xla/hlo/analysis/alias_info.h"

namespace xla {
namespace remat {

class TargetAliasInfo {
 public:
  explicit TargetAliasInfo(const AliasInfo* given) : given_(given) {}
  TargetAliasInfo(const TargetAliasInfo&) = delete;
  TargetAliasInfo& operator=(const TargetAliasInfo&) = delete;

  const AliasInfo* get() const {
    return given_ != nullptr ? given_ : &default_;
  }

 private:
  const AliasInfo* given_;  // not owned; may be null
  AliasInfo default_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_TARGET_ALIAS_INFO_H_
