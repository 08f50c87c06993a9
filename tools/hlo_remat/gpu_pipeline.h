// XLA's GPU compiler from the tensorflow wheel, run without a GPU: the HLO
// passes, the GPU scheduler and the post-scheduling pipeline, with a pass of
// ours inserted exactly where the patch's GPU hook puts it.
//
// The wheel's GpuCompiler::RunPostSchedulingPipelines has no hook, so
// RunPostSchedulingToHook, RunHookPass and RunPostSchedulingFromHook rebuild it
// from the wheel's exported passes, in the order
// of gpu_compiler.cc at openxla 7420bd5453 (the XLA of TF v2.21.0):
// post-scheduling copy insertion; async-to-sync; HloRematerialization, [our
// pass], StreamAttributeAnnotator, OptimizationBarrierExpander; FusionWrapper;
// FusionDispatchPipeline (Ampere and later); SanitizeConstantNames.
// WheelReference compiles the same module with the wheel's own code end to end,
// so tests can prove the rebuilt pipeline faithful.
#ifndef HLO_REMAT_GPU_PIPELINE_H_
#define HLO_REMAT_GPU_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/pass/hlo_pass_interface.h"
#include "xla/service/compiler.h"
#include "xla/service/gpu/alias_info.h"
#include "xla/service/remat/remat_report.h"
#include "xla/service/remat/size_function.h"
#include "xla/stream_executor/device_description.h"
#include "xla/stream_executor/device_description.pb.h"

namespace hlo_remat {

class MlirContextHolder;

struct ScheduledGpuModule {
  std::unique_ptr<xla::HloModule> module;
  // ScheduleGpuModule's memory limit, which the post-scheduling pipeline's
  // HloRematerialization derives its budget from.
  int64_t scheduler_mem_limit = 0;
  // Lookups of the compile's convolutions and GEMMs in the loaded autotune
  // results (both 0 when none are loaded).
  int64_t autotune_hits = 0;
  int64_t autotune_misses = 0;
};

struct BufferAssignmentFigures {
  int64_t total_bytes = 0;  // all allocations, as XLA's memory-usage report
  int64_t allocations = 0;
};

class GpuPipeline {
 public:
  // `disabled_passes` go to DebugOptions.xla_disable_hlo_passes (how
  // --xla_rematerialization_disable_cuda is emulated out of tree).
  static absl::StatusOr<std::unique_ptr<GpuPipeline>> Create(
      const stream_executor::GpuTargetConfigProto& target,
      std::vector<std::string> disabled_passes);
  ~GpuPipeline();

  // Compiles from now on with the kernels of `path`, XLA autotune results
  // recorded on a real GPU (--xla_gpu_dump_autotune_results_to there;
  // textproto when the name ends in .txt, .textproto, .pbtxt, ...; binary
  // otherwise). Entries for another GPU or another HLO are never found: those
  // instructions keep XLA's default kernels. InvalidArgument if unreadable.
  absl::Status UseAutotuneResults(const std::string& path);

  // RunHloPasses, the pre-scheduling FusionWrapper and ScheduleGpuModule, as
  // GpuCompiler::RunBackend does before the post-scheduling pipelines.
  absl::StatusOr<ScheduledGpuModule> CompileAndSchedule(
      std::unique_ptr<xla::HloModule> module);

  // The post-scheduling pipeline in three parts, cut where the patch's GPU
  // hook runs the pass (right after XLA's HloRematerialization): the part
  // before the hook is the same with and without the pass, so a module is
  // taken that far once and cloned for each way on.
  absl::Status RunPostSchedulingToHook(xla::HloModule* module,
                                       int64_t scheduler_mem_limit);
  // Runs `pass` (not owned) where the hook does; whether it changed `module`.
  absl::StatusOr<bool> RunHookPass(xla::HloModule* module,
                                   xla::HloPassInterface* pass);
  absl::Status RunPostSchedulingFromHook(xla::HloModule* module);

  // The wheel's own compile of the unoptimized `module` (RunHloPasses, then
  // RunBackend, which runs the wheel's RunPostSchedulingPipelines and dumps the
  // optimized module into `dump_dir` before code generation); returns that
  // dumped module. Code generation then fails here without CUDA's tools, which
  // is expected and ignored once the dump exists.
  absl::StatusOr<std::unique_ptr<xla::HloModule>> WheelReference(
      std::unique_ptr<xla::HloModule> module, const std::string& dump_dir);

  absl::StatusOr<int64_t> HeapSimulatorPeak(const xla::HloModule& module) const;
  absl::StatusOr<BufferAssignmentFigures> AssignBuffers(
      const xla::HloModule& module) const;

  // The GPU compiler's ShapeSizeBytesFunction and alias rules.
  const xla::remat::SizeFunction& size_fn() const { return size_fn_; }
  const xla::gpu::GpuAliasInfo* alias_info() const { return alias_info_.get(); }
  const stream_executor::DeviceDescription& device() const { return device_; }

 private:
  GpuPipeline() = default;
  void ConfigureModule(xla::HloModule& module) const;

  std::unique_ptr<xla::Compiler> compiler_;
  std::unique_ptr<MlirContextHolder> mlir_context_;
  stream_executor::DeviceDescription device_;
  std::unique_ptr<xla::gpu::GpuAliasInfo> alias_info_;
  xla::remat::SizeFunction size_fn_;
  int64_t pointer_size_ = 0;
  std::string target_config_file_;
  std::vector<std::string> disabled_passes_;
  bool autotune_results_loaded_ = false;
};

// Fusions whose result is a tuple (multi-output and horizontal fusions), and
// other tuple-shaped producers (cuDNN/cuBLAS custom-calls returning scratch),
// in the non-fusion computations of `module`.
xla::remat::GpuInstructionCounts CountTupleProducers(
    const xla::HloModule& module);

}  // namespace hlo_remat

#endif  // HLO_REMAT_GPU_PIPELINE_H_
