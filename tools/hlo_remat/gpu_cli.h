// hlo-remat --platform gpu: compile pre-optimization HLO with the wheel's GPU
// compiler for a named GPU (no device needed), run the pass where the patch's
// GPU hook runs it, and report the pipeline's figures without and with it.
#ifndef HLO_REMAT_GPU_CLI_H_
#define HLO_REMAT_GPU_CLI_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_report.h"

namespace hlo_remat {

struct GpuCliArgs {
  std::string target;        // --gpu-target (an embedded spec)
  std::string target_file;   // --gpu-target-file (wins over target)
  std::string output;        // -o: the module after our pass
  std::string baseline_out;  // --baseline-out: the same pipeline without it
  // --wheel-reference-out: the wheel's own compile of the input (the
  // faithfulness reference); its figures go into the report.
  std::string wheel_reference_out;
  // --gpu-disable-passes A,B: more pass names for xla_disable_hlo_passes (to
  // measure which passes build what).
  std::string disable_passes;
  // --gpu-autotune-results F: kernels recorded on the user's GPU.
  std::string autotune_results;
  // --explain-peak N: the N largest values live at the peak of the pipeline's
  // module without the pass and with it, printed to the user.
  int explain_peak_top = 0;
  // --capped-rerun F --capped-report R: where the pass spends more than F of
  // the step's FLOPs, it plans again from the same compiled module with the
  // compute cap at F and writes that report to R (nothing where the first
  // plan is within F: it answers both, met or missed; remat-harness fit asks
  // its two questions of one compile). Negative: off.
  double capped_rerun = -1;
  std::string capped_report;
};

// InvalidArgument for bad targets or unwritable outputs (exit 2); other errors
// are failures of the pipeline or the pass.
absl::StatusOr<xla::remat::RematReport> RunGpuPath(
    std::unique_ptr<xla::HloModule> module, xla::remat::RematOptions options,
    const GpuCliArgs& args);

}  // namespace hlo_remat

#endif  // HLO_REMAT_GPU_CLI_H_
