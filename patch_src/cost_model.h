// What recomputing costs, the same on every platform.
//
// HloCostAnalysis counts elementwise ops, dots and convolutions, also inside
// fusions (Triton GEMM fusions hold a dot), but gives custom-calls no FLOPs:
// on GPU-compiled HLO every convolution is a cuDNN custom-call and, without
// Triton GEMMs, every GEMM a cuBLAS one. This analysis counts those library
// calls (library_calls.h) with XLA's own convolution and dot FLOP formulas,
// on the shapes of the forward convolution the call runs, so a GPU module
// counts what the same step counts on CPU and flops_after/flops_before means
// the same on both. (XLA's GpuHloCostAnalysis, which the wheel exports, also
// weighs elementwise ops by a per-GPU op profile: its totals are not
// comparable with the CPU figures, so it is not used.)
#ifndef XLA_SERVICE_REMAT_COST_MODEL_H_
#define XLA_SERVICE_REMAT_COST_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

class RematCostAnalysis : public HloCostAnalysis {
 public:
  explicit RematCostAnalysis(const SizeFunction& size_fn);
  explicit RematCostAnalysis(const Options& options)
      : HloCostAnalysis(options) {}

  // Library calls: their FLOPs, and bytes without the scratch or workspace
  // output. Any other custom-call stays unknown, as in HloCostAnalysis.
  absl::Status HandleCustomCall(const HloInstruction* custom_call) override;

 protected:
  // Fusion bodies are costed by this analysis too.
  std::unique_ptr<HloCostAnalysis> CreateNestedCostAnalysis() override;
};

// FLOPs of an allow-listed library call; nullopt for any other instruction
// or a GEMM without dot dimension numbers. An error when its configuration
// does not parse.
absl::StatusOr<std::optional<int64_t>> LibraryCallFlops(
    const HloInstruction& instruction);

// Runs the analysis on the entry computation (and what it calls).
absl::StatusOr<std::unique_ptr<RematCostAnalysis>> AnalyzeCosts(
    const HloModule& module, const SizeFunction& size_fn);

// Recompute cost of an instruction in element operations: FLOPs and
// transcendentals plus one per 4 bytes moved (unknown figures count as 0).
double RecomputeCost(const HloCostAnalysis& costs,
                     const HloInstruction& instruction);

// FLOPs and transcendentals of one more run of an instruction: what the
// compute cap (--xla_rematerialization_max_extra_flops) counts.
double RecomputeFlops(const HloCostAnalysis& costs,
                      const HloInstruction& instruction);

// FLOPs and transcendentals of the entry computation, plus one operation per
// element copied: the copies `compress` adds cost time though HloCostAnalysis
// counts no FLOPs for them.
double ModuleFlops(const HloModule& module, const HloCostAnalysis& costs);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_COST_MODEL_H_
