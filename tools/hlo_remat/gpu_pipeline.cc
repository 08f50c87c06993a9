#include "gpu_pipeline.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "gpu_mlir_standin.h"
#include "xla/backends/gpu/target_config/target_config.h"
#include "xla/debug_options_flags.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/hlo/parser/hlo_parser.h"
#include "xla/hlo/pass/hlo_pass_pipeline.h"
#include "xla/hlo/transforms/expanders/optimization_barrier_expander.h"
#include "xla/hlo/transforms/simplifiers/hlo_dce.h"
#include "xla/hlo/transforms/simplifiers/hlo_rematerialization.h"
#include "xla/service/buffer_assignment.h"
#include "xla/service/copy_insertion.h"
#include "xla/service/gpu/autotuning/autotuner_util.h"
#include "xla/service/gpu/fusion_dispatch_pipeline.h"
#include "xla/service/gpu/gpu_constants.h"
#include "xla/service/gpu/gpu_hlo_schedule.h"
#include "xla/service/gpu/nvptx_alias_info.h"
#include "xla/service/gpu/transforms/collectives/convert_async_collectives_to_sync.h"
#include "xla/service/gpu/transforms/fusion_wrapper.h"
#include "xla/service/gpu/transforms/sanitize_constant_names.h"
#include "xla/service/gpu/transforms/stream_attribute_annotator.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/hlo_verifier.h"
#include "xla/service/remat/memory_figure.h"
#include "xla/service/remat/remat_schedule.h"
#include "xla/shape_util.h"
#include "xla/stream_executor/cuda/cuda_platform_id.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"
#include "xla/xla.pb.h"

namespace hlo_remat {

// Owns an mlir::MLIRContext, which the stand-in header declares without its
// size: the real object is one pointer (its pimpl, see MLIRContext.h under
// the wheel's include/external/llvm-project), and this storage holds eight.
class MlirContextHolder {
 public:
  MlirContextHolder() {
    // GpuCompiler's own context: multithreaded, symbolic expressions
    // registered (its constructor at openxla 7420bd5453).
    context_ =
        new (storage_) mlir::MLIRContext(mlir::MLIRContext::Threading::ENABLED);
    xla::RegisterSymbolicExprStorage(context_);
  }
  ~MlirContextHolder() { context_->~MLIRContext(); }
  MlirContextHolder(const MlirContextHolder&) = delete;
  MlirContextHolder& operator=(const MlirContextHolder&) = delete;
  mlir::MLIRContext* get() { return context_; }

 private:
  alignas(16) unsigned char storage_[64];
  mlir::MLIRContext* context_ = nullptr;
};

namespace {

// Runs a pass owned elsewhere inside a pipeline (pipelines own their passes),
// under its own name, so that --xla_disable_hlo_passes and dumps see it.
class BorrowedPass : public xla::HloModulePass {
 public:
  explicit BorrowedPass(xla::HloPassInterface* pass) : pass_(pass) {}
  absl::string_view name() const override { return pass_->name(); }

 protected:
  absl::StatusOr<bool> RunImpl(xla::HloModule* module,
                               const absl::flat_hash_set<absl::string_view>&
                                   execution_threads) override {
    return pass_->Run(module, execution_threads);
  }

 private:
  xla::HloPassInterface* pass_;
};

// Upstream's RunPostSchedulingCopyInsertion adds copies for collective
// memory spaces only when one of these is on; its predicate is then needed.
absl::Status CheckCollectiveMemoryOff(const xla::DebugOptions& options) {
  if (options.xla_gpu_enable_nccl_user_buffers() ||
      options.xla_gpu_experimental_enable_nvshmem() ||
      options.xla_gpu_experimental_enable_nccl_symmetric_buffers()) {
    return absl::UnimplementedError(
        "collective memory spaces (NCCL user buffers, NVSHMEM) are not "
        "reproduced by the rebuilt post-scheduling pipeline");
  }
  return absl::OkStatus();
}

// GpuCompiler's RunPostSchedulingCopyInsertion: drop the copies the schedule
// makes unnecessary, re-add the special-case ones, keep the schedule.
absl::Status PostSchedulingCopyInsertion(xla::HloModule* module,
                                         const xla::AliasInfo* alias_info) {
  const xla::DebugOptions& options = module->config().debug_options();
  TF_RETURN_IF_ERROR(CheckCollectiveMemoryOff(options));
  const int64_t region_analysis_limit =
      options.xla_gpu_copy_insertion_use_region_analysis() ? -1 : 0;
  xla::CopyInsertion copy_insertion(alias_info, region_analysis_limit);
  TF_RETURN_IF_ERROR(copy_insertion.RemoveUnnecessaryCopies(module));
  // The module is in flux while copies are added: keep the schedule aside.
  xla::HloSchedule saved_schedule = module->schedule();
  module->clear_schedule();
  // With collective memory off, upstream's target-specific predicate is false
  // for every value (checked above).
  TF_RETURN_IF_ERROR(copy_insertion.AddSpecialCaseCopies(
      module, /*execution_threads=*/{},
      [](const xla::HloValue*) { return false; }));
  TF_RETURN_IF_ERROR(xla::HloDCE().Run(module).status());
  TF_RETURN_IF_ERROR(saved_schedule.Update());
  return module->set_schedule(std::move(saved_schedule));
}

// Upstream's pipeline that holds XLA's rematerialization and, in-tree, the
// patch's hook: one name for the three parts, so that
// --xla_disable_hlo_passes=remat-pipeline still turns all of it off.
constexpr char kRematPipelineName[] = "remat-pipeline";

int64_t InstructionCount(const xla::HloModule& module) {
  int64_t n = 0;
  for (const xla::HloComputation* c : module.computations()) {
    n += c->instruction_count();
  }
  return n;
}

}  // namespace

GpuPipeline::~GpuPipeline() {
  if (!target_config_file_.empty()) std::remove(target_config_file_.c_str());
}

absl::StatusOr<std::unique_ptr<GpuPipeline>> GpuPipeline::Create(
    const stream_executor::GpuTargetConfigProto& target,
    std::vector<std::string> disabled_passes) {
  if (target.gpu_device_info().has_rocm_compute_capability()) {
    return absl::InvalidArgumentError(
        "an AMD GPU spec: the pipeline here is the wheel's NVPTX compiler, "
        "for NVIDIA GPUs only");
  }
  std::unique_ptr<GpuPipeline> pipeline(new GpuPipeline());
  TF_ASSIGN_OR_RETURN(xla::gpu::GpuTargetConfig config,
                      xla::gpu::GpuTargetConfig::FromProto(target));
  pipeline->device_ = config.device_description;
  // The wheel registers its NVPTX compiler for the CUDA platform id; asking
  // by id initializes no platform, so no GPU is needed.
  TF_ASSIGN_OR_RETURN(
      pipeline->compiler_,
      xla::Compiler::GetForPlatform(stream_executor::cuda::kCudaPlatformId));
  pipeline->mlir_context_ = std::make_unique<MlirContextHolder>();
  // NVPTXCompiler::GetAliasInfo returns exactly this (7420bd5453).
  pipeline->alias_info_ =
      std::make_unique<xla::gpu::NVPTXAliasInfo>(pipeline->device_);
  pipeline->size_fn_ = pipeline->compiler_->ShapeSizeBytesFunction();
  // GpuCompiler::GetPointerSize is inline; a one-element tuple's table is
  // one pointer under the compiler's own size function.
  pipeline->pointer_size_ = pipeline->size_fn_(xla::ShapeUtil::MakeTupleShape(
      {xla::ShapeUtil::MakeShape(xla::F32, {})}));
  if (pipeline->pointer_size_ != 4 && pipeline->pointer_size_ != 8) {
    return absl::InternalError(
        absl::StrCat("unexpected GPU pointer size ", pipeline->pointer_size_));
  }
  // This XLA's CompileOptions has no target field: RunHloPasses reads the
  // target from a file named in the debug options.
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(target, &text)) {
    return absl::InternalError("cannot print the GPU target config");
  }
  char path[] = "/tmp/hlo_remat_gpu_target_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return absl::InternalError("cannot create a temporary file");
  close(fd);
  pipeline->target_config_file_ = path;
  std::ofstream(path) << text;
  pipeline->disabled_passes_ = std::move(disabled_passes);
  return pipeline;
}

void GpuPipeline::ConfigureModule(xla::HloModule& module) const {
  // Defaults as TensorFlow passes them with XLA_FLAGS empty; XLA_FLAGS is the
  // CLI's (it carries our flags, which XLA's parser would reject).
  xla::DebugOptions options = xla::DefaultDebugOptionsIgnoringFlags();
  options.set_xla_gpu_target_config_filename(target_config_file_);
  // Without a GPU nothing is measured: level 0 keeps XLA's default kernels.
  // With loaded results, a level above 0 makes the convolutions and GEMMs
  // candidates, so the autotuner applies the entries it finds (a miss keeps
  // the default; xla_gpu_require_complete_aot_autotune_results stays off).
  options.set_xla_gpu_autotune_level(autotune_results_loaded_ ? 4 : 0);
  for (const std::string& pass : disabled_passes_) {
    options.add_xla_disable_hlo_passes(pass);
  }
  module.mutable_config().set_debug_options(options);
}

absl::Status GpuPipeline::UseAutotuneResults(const std::string& path) {
  // The results live in a process-wide cache: one file at a time.
  xla::gpu::AutotunerUtil::ClearAutotuneResults();
  absl::Status loaded =
      xla::gpu::AutotunerUtil::LoadAutotuneResultsFromFile(path);
  if (!loaded.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu-autotune-results ", path, ": ", loaded.message()));
  }
  autotune_results_loaded_ = true;
  return absl::OkStatus();
}

absl::StatusOr<ScheduledGpuModule> GpuPipeline::CompileAndSchedule(
    std::unique_ptr<xla::HloModule> module) {
  ConfigureModule(*module);
  xla::gpu::AutotunerUtil::ClearCacheStats();
  TF_ASSIGN_OR_RETURN(
      module, compiler_->RunHloPasses(std::move(module), /*executor=*/nullptr,
                                      xla::Compiler::CompileOptions{}));
  const xla::gpu::AutotunerUtil::CacheStats lookups =
      xla::gpu::AutotunerUtil::GetCacheStats();
  // GpuCompiler::RunPreSchedulingPasses: its other passes only collect
  // cost-model statistics (xla_gpu_collect_cost_model_stats).
  xla::HloPassPipeline pre("pre-scheduling-passes");
  pre.AddPass<xla::gpu::FusionWrapper>(device_);
  TF_RETURN_IF_ERROR(pre.Run(module.get()).status());
  TF_ASSIGN_OR_RETURN(
      xla::gpu::ScheduleMetadata metadata,
      xla::gpu::ScheduleGpuModule(module.get(), pointer_size_, device_,
                                  mlir_context_->get(), alias_info_.get()));
  TF_RETURN_IF_ERROR(xla::HloVerifier(/*layout_sensitive=*/true,
                                      /*allow_mixed_precision=*/true)
                         .Run(module.get())
                         .status());
  ScheduledGpuModule scheduled;
  scheduled.module = std::move(module);
  scheduled.scheduler_mem_limit =
      static_cast<int64_t>(metadata.scheduler_mem_limit);
  if (autotune_results_loaded_) {
    scheduled.autotune_hits = lookups.cache_hits;
    scheduled.autotune_misses = lookups.cache_misses;
  }
  return scheduled;
}

absl::Status GpuPipeline::RunPostSchedulingToHook(xla::HloModule* module,
                                                  int64_t scheduler_mem_limit) {
  const xla::DebugOptions& options = module->config().debug_options();
  if (options.xla_gpu_enable_host_memory_offloading()) {
    return absl::UnimplementedError(
        "host memory offloading is not reproduced by the rebuilt "
        "post-scheduling pipeline");
  }
  if (options.xla_gpu_pgle_accuracy_checker() ==
      xla::DebugOptions::PGLE_STRICTNESS_LEVEL_ERROR) {
    return absl::UnimplementedError(
        "the PGLE accuracy checker is not reproduced by the rebuilt "
        "post-scheduling pipeline");
  }
  TF_RETURN_IF_ERROR(PostSchedulingCopyInsertion(module, alias_info_.get()));
  // Upstream's one "post-scheduling-passes" pipeline, cut where the hook
  // runs: the same passes in the same order, under the same names.
  xla::HloPassPipeline main_pipeline("post-scheduling-passes");
  {
    xla::HloPassPipeline& pipeline =
        main_pipeline.AddPass<xla::HloPassPipeline>("async-to-sync-converter");
    pipeline.AddPass<xla::gpu::GpuConvertAsyncCollectivesToSync>();
  }
  // XLA's own rematerialization, configured as upstream does without host
  // offloading: recompute and compress, blocks of one, no minimum size.
  xla::HloRematerialization::RematerializationSizes sizes;
  xla::HloCostAnalysis::Options cost_options;
  cost_options.shape_size = size_fn_;
  xla::HloCostAnalysis cost_analysis(cost_options);
  // The scheduler's limit already excludes the output, which
  // HloRematerialization subtracts again: add it back, as upstream does.
  int64_t remat_limit = scheduler_mem_limit;
  xla::ShapeUtil::ForEachSubshape(
      module->result_shape(),
      [&](const xla::Shape& subshape, const xla::ShapeIndex&) {
        remat_limit += size_fn_(subshape);
      });
  xla::HloRematerialization::Options remat_options(
      cost_analysis,
      xla::HloRematerialization::RematerializationModeConfig(
          /*recompute=*/true, /*compress=*/true, /*host_offload=*/false),
      remat_limit, /*block_size_limit=*/1,
      /*block_rematerialization_factor=*/1, /*min_remat_size=*/0,
      /*compact_shape_function=*/nullptr);
  main_pipeline.AddPass<xla::HloPassPipeline>(kRematPipelineName)
      .AddPass<xla::HloRematerialization>(remat_options, sizes);
  return main_pipeline.Run(module, {xla::HloInstruction::kMainExecutionThread})
      .status();
}

absl::StatusOr<bool> GpuPipeline::RunHookPass(xla::HloModule* module,
                                              xla::HloPassInterface* pass) {
  xla::HloPassPipeline main_pipeline("post-scheduling-passes");
  main_pipeline.AddPass<xla::HloPassPipeline>(kRematPipelineName)
      .AddPass<BorrowedPass>(pass);
  return main_pipeline.Run(module, {xla::HloInstruction::kMainExecutionThread});
}

absl::Status GpuPipeline::RunPostSchedulingFromHook(xla::HloModule* module) {
  xla::HloPassPipeline main_pipeline("post-scheduling-passes");
  {
    xla::HloPassPipeline& pipeline =
        main_pipeline.AddPass<xla::HloPassPipeline>(kRematPipelineName);
    pipeline.AddPass<xla::gpu::StreamAttributeAnnotator>(device_);
    pipeline.AddPass<xla::OptimizationBarrierExpander>();
  }
  {
    xla::HloPassPipeline& pipeline =
        main_pipeline.AddPass<xla::HloPassPipeline>("fusion-wrapper");
    pipeline.AddPass<xla::gpu::FusionWrapper>(device_);
  }
  const auto* cuda_cc =
      device_.gpu_compute_capability().cuda_compute_capability();
  if (cuda_cc != nullptr && cuda_cc->IsAtLeastAmpere()) {
    main_pipeline.AddPass<xla::HloPassPipeline>(
        xla::gpu::FusionDispatchPipeline(device_, size_fn_,
                                         mlir_context_->get()));
  }
  {
    xla::HloPassPipeline& pipeline =
        main_pipeline.AddPass<xla::HloPassPipeline>("sanitize-constant-names");
    pipeline.AddPass<xla::gpu::SanitizeConstantNames>();
  }
  return main_pipeline.Run(module, {xla::HloInstruction::kMainExecutionThread})
      .status();
}

absl::StatusOr<std::unique_ptr<xla::HloModule>> GpuPipeline::WheelReference(
    std::unique_ptr<xla::HloModule> module, const std::string& dump_dir) {
  ConfigureModule(*module);
  xla::DebugOptions options = module->config().debug_options();
  options.set_xla_dump_to(dump_dir);
  options.set_xla_dump_hlo_as_text(true);
  module->mutable_config().set_debug_options(options);
  TF_ASSIGN_OR_RETURN(
      module, compiler_->RunHloPasses(std::move(module), /*executor=*/nullptr,
                                      xla::Compiler::CompileOptions{}));
  // Code generation needs CUDA's tools: its failure is expected here.
  absl::Status backend =
      compiler_
          ->RunBackend(std::move(module), /*executor=*/nullptr,
                       xla::Compiler::CompileOptions{})
          .status();
  std::filesystem::path found;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(dump_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (absl::EndsWith(name, "gpu_after_optimizations.txt"))
      found = entry.path();
  }
  if (found.empty()) {
    return absl::InternalError(
        absl::StrCat("the wheel's GPU compile dumped no optimized module into ",
                     dump_dir, "; RunBackend: ", backend.ToString()));
  }
  std::ifstream in(found);
  std::stringstream text;
  text << in.rdbuf();
  return xla::ParseAndReturnUnverifiedModule(text.str());
}

absl::StatusOr<int64_t> GpuPipeline::HeapSimulatorPeak(
    const xla::HloModule& module) const {
  return xla::remat::HeapSimulatorPeak(module, size_fn_, alias_info_.get());
}

absl::StatusOr<BufferAssignmentFigures> GpuPipeline::AssignBuffers(
    const xla::HloModule& module) const {
  // As compile_module_to_llvm_ir.cc's RunBufferAssignment with default
  // options: constants get buffers, 256-byte alignment.
  TF_ASSIGN_OR_RETURN(std::unique_ptr<xla::BufferAssignment> assignment,
                      xla::remat::AssignBuffersOnSchedule(
                          module, size_fn_, alias_info_.get(),
                          xla::gpu::kXlaAllocatedBufferAlignBytes));
  BufferAssignmentFigures figures;
  figures.total_bytes = assignment->GetStats().total_allocation_bytes;
  figures.allocations = assignment->GetStats().total_allocation_count;
  return figures;
}

xla::remat::GpuInstructionCounts CountTupleProducers(
    const xla::HloModule& module) {
  xla::remat::GpuInstructionCounts counts;
  counts.instructions = InstructionCount(module);
  for (const xla::HloComputation* computation : module.computations()) {
    if (computation->IsFusionComputation()) continue;
    for (const xla::HloInstruction* instruction : computation->instructions()) {
      const bool tuple = instruction->shape().IsTuple();
      if (instruction->opcode() == xla::HloOpcode::kFusion) {
        ++counts.fusions;
        if (tuple) ++counts.multi_output_fusions;
      } else if (instruction->opcode() == xla::HloOpcode::kCustomCall &&
                 tuple) {
        ++counts.tuple_custom_calls;
      }
    }
  }
  return counts;
}

}  // namespace hlo_remat
