// Runs two modules on the same random inputs with XLA's CPU backend (a
// LocalClient; the PJRT headers need MLIR, which the wheel lacks) and
// compares their outputs bit for bit.
#ifndef HLO_REMAT_NUMERICS_CHECK_H_
#define HLO_REMAT_NUMERICS_CHECK_H_

#include <string>

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"

namespace hlo_remat {

struct NumericsResult {
  bool equal = false;
  std::string detail;  // where they first differ, or how they were run
};

absl::StatusOr<NumericsResult> CompareNumerics(const xla::HloModule& original,
                                               const xla::HloModule& changed,
                                               unsigned seed);

}  // namespace hlo_remat

#endif  // HLO_REMAT_NUMERICS_CHECK_H_
