// Stand-ins for the upstream translation units remat.patch adds lines to.
//
// cpu_compiler.cc and gpu_compiler.cc include LLVM and MLIR headers the
// tensorflow wheel does not ship, so they cannot be compiled
// here. Each function below makes the patch's added line verbatim, in a scope
// whose names have the types they have at the upstream call site (v2.21.0),
// from the real headers. tests/test_patch.py checks that every added C++ line
// of the patch appears here, so the two cannot drift apart.
// debug_options_flags.cc compiles against the wheel's headers: with
// REMAT_UPSTREAM_XLA set, the test compiles that real file with its hunks.
//
// Nothing here is called; it only has to compile.
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/pass/hlo_pass_pipeline.h"
#include "xla/service/gpu/alias_info.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/remat/remat_flags.h"
#include "xla/service/remat/remat_hooks.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/util/command_line_flags.h"

namespace xla {
namespace wiring_stand_ins {

// debug_options_flags.cc, MakeDebugOptionsFlags(std::vector<tsl::Flag>*
// flag_list, DebugOptions*).
void DebugOptionsFlags(std::vector<tsl::Flag>* flag_list) {
  remat::AppendRematFlags(flag_list);
}

// gpu_compiler.cc, GpuCompiler::RunPostSchedulingPipelines: `pipeline` is an
// HloPassPipeline&, ShapeSizeBytesFunction() a GpuCompiler method returning
// HloCostAnalysis::ShapeSizeFunction, `alias_info` a const GpuAliasInfo*.
class GpuCompilerStandIn {
 public:
  HloCostAnalysis::ShapeSizeFunction ShapeSizeBytesFunction() const;

  void PostSchedulingPipelines(HloPassPipeline& main_pipeline,
                               const gpu::GpuAliasInfo* alias_info) {
    HloPassPipeline& pipeline =
        main_pipeline.AddPass<HloPassPipeline>("remat-pipeline");
    // clang-format off: the patch's added line, verbatim (see above).
    remat::AddRematPassIfEnabled(pipeline, ShapeSizeBytesFunction(), alias_info);
    // clang-format on
  }
};

// gpu_compiler.cc, GpuCompiler::RunHloPasses(std::unique_ptr<HloModule>
// module, ...).
void RunHloPasses(std::unique_ptr<HloModule> module) {
  remat::DisableMultiOutputFusionPasses(module->mutable_config());
}

// cpu_compiler.cc, CpuCompiler::CompileCpuExecutable(std::unique_ptr<HloModule>
// module, ...), which returns a StatusOr: TF_RETURN_IF_ERROR returns the error.
absl::Status CompileCpuExecutable(std::unique_ptr<HloModule> module) {
  TF_RETURN_IF_ERROR(remat::RunRematIfEnabled(&*module, remat::PlainBytes));
  return absl::OkStatus();
}

}  // namespace wiring_stand_ins
}  // namespace xla
