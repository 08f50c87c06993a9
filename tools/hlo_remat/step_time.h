// Step time beside memory: the speed lost for the memory saved. Runs the
// original and the rematerialized module on XLA:CPU and compares medians.
#ifndef HLO_REMAT_STEP_TIME_H_
#define HLO_REMAT_STEP_TIME_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"

namespace hlo_remat {

struct StepTimes {
  double before_s = 0;  // median over the runs
  double after_s = 0;
  int runs = 0;
};

// The N of `--time N`: a positive count, or InvalidArgument naming the flag.
absl::StatusOr<int> ParseRunCount(absl::string_view text);

// Compiles each module once, runs each once to warm up, then `runs` times
// each, alternating so that load on a shared machine falls on both alike;
// only execution is timed. Both see the same random arguments.
absl::StatusOr<StepTimes> MeasureStepTimes(const xla::HloModule& before,
                                           const xla::HloModule& after,
                                           int runs);

}  // namespace hlo_remat

#endif  // HLO_REMAT_STEP_TIME_H_
