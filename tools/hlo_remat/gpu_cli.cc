#include "gpu_cli.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "engine_channel.h"
#include "gpu_pipeline.h"
#include "gpu_target.h"
#include "module_output.h"
#include "peak_breakdown.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/parser/hlo_parser.h"
#include "xla/service/hlo_verifier.h"
#include "xla/service/remat/remat_hooks.h"
#include "xla/service/remat/remat_pass.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace hlo_remat {
namespace {

absl::Status CheckValid(xla::HloModule* module) {
  xla::HloVerifier verifier(/*layout_sensitive=*/true,
                            /*allow_mixed_precision=*/true);
  absl::Status status = verifier.Run(module).status();
  if (status.ok()) status = module->schedule().Verify();
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("GPU module after the pipeline fails verification: ",
                     status.message()));
  }
  return absl::OkStatus();
}

// The wheel's own compile of `input`, and how it compares with `baseline`.
absl::StatusOr<xla::remat::WheelReferenceFigures> WheelReference(
    GpuPipeline& pipeline, std::unique_ptr<xla::HloModule> input,
    const xla::HloModule& baseline, const std::string& out_path) {
  const std::string dump_dir = absl::StrCat(out_path, ".dump");
  std::filesystem::remove_all(dump_dir);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<xla::HloModule> reference,
                      pipeline.WheelReference(std::move(input), dump_dir));
  TF_RETURN_IF_ERROR(WriteModule(out_path, *reference));
  TF_ASSIGN_OR_RETURN(int64_t peak, pipeline.HeapSimulatorPeak(*reference));
  TF_ASSIGN_OR_RETURN(BufferAssignmentFigures assigned,
                      pipeline.AssignBuffers(*reference));
  // The same HLO, names aside (a second compile in one process numbers
  // fusions and clones differently): both printed without names or metadata,
  // in schedule order, after the same text round trip.
  TF_ASSIGN_OR_RETURN(std::unique_ptr<xla::HloModule> ours,
                      xla::ParseAndReturnUnverifiedModule(baseline.ToString()));
  const xla::HloPrintOptions print = xla::HloPrintOptions::Fingerprint();
  xla::remat::WheelReferenceFigures figures;
  figures.heap_sim_bytes = peak;
  figures.buffer_assignment_bytes = assigned.total_bytes;
  figures.counts = CountTupleProducers(*reference);
  figures.text_equal = ours->ToString(print) == reference->ToString(print);
  return figures;
}

// The GPU pipeline for the named target, with the passes the options and
// --disable-passes turn off (as the in-tree hook does, remat_hooks.h).
struct ConfiguredPipeline {
  std::unique_ptr<GpuPipeline> pipeline;
  std::string target_name;
  std::vector<std::string> disabled_passes;
  // What the target's spec says of the card: its memory and, for CUDA, the
  // compute capability's major version (0 otherwise). `remat-harness fit`
  // needs both: the card's memory less the framework's reserve is the budget.
  int64_t device_memory_bytes = 0;
  int compute_capability_major = 0;
};

absl::StatusOr<ConfiguredPipeline> ConfigurePipeline(
    const xla::remat::RematOptions& options, const GpuCliArgs& args) {
  ConfiguredPipeline configured;
  stream_executor::GpuTargetConfigProto target;
  configured.target_name =
      args.target.empty() ? kDefaultGpuTarget : args.target;
  if (!args.target_file.empty()) {
    TF_ASSIGN_OR_RETURN(target, GpuTargetFromFile(args.target_file));
    configured.target_name = args.target_file;
  } else {
    TF_ASSIGN_OR_RETURN(target, GpuTargetByName(configured.target_name));
  }
  configured.device_memory_bytes =
      target.gpu_device_info().device_memory_size();
  if (target.gpu_device_info().has_cuda_compute_capability()) {
    configured.compute_capability_major =
        target.gpu_device_info().cuda_compute_capability().major();
  }
  if (options.disable_cuda_fusions) {
    configured.disabled_passes = xla::remat::MultiOutputFusionPassNames();
  }
  for (absl::string_view pass :
       absl::StrSplit(args.disable_passes, ',', absl::SkipEmpty())) {
    configured.disabled_passes.emplace_back(pass);
  }
  absl::StatusOr<std::unique_ptr<GpuPipeline>> created =
      GpuPipeline::Create(target, configured.disabled_passes);
  if (absl::IsInvalidArgument(created.status())) {
    return absl::InvalidArgumentError(absl::StrCat(
        args.target_file.empty() ? "--gpu-target=" : "--gpu-target-file ",
        configured.target_name, ": ", created.status().message()));
  }
  TF_ASSIGN_OR_RETURN(configured.pipeline, std::move(created));
  if (!args.autotune_results.empty()) {
    TF_RETURN_IF_ERROR(
        configured.pipeline->UseAutotuneResults(args.autotune_results));
  }
  return configured;
}

// What the pipeline's module without the pass allocates: computed once, for
// every run of the pass.
struct BaselineFigures {
  int64_t heap_sim_bytes = 0;
  BufferAssignmentFigures assigned;
  xla::remat::GpuInstructionCounts counts;
};

absl::StatusOr<BaselineFigures> MeasureBaseline(
    GpuPipeline& pipeline, const xla::HloModule& baseline) {
  BaselineFigures figures;
  TF_ASSIGN_OR_RETURN(figures.heap_sim_bytes,
                      pipeline.HeapSimulatorPeak(baseline));
  TF_ASSIGN_OR_RETURN(figures.assigned, pipeline.AssignBuffers(baseline));
  figures.counts = CountTupleProducers(baseline);
  return figures;
}

// The report's figures become the pipeline's final ones, without
// (`baseline`) and with (`optimized`, null where the pass changed nothing)
// the pass; the pass's own, taken at its hook, stay beside them.
absl::Status SetFinalFigures(GpuPipeline& pipeline,
                             const BaselineFigures& baseline,
                             const xla::HloModule* optimized,
                             xla::remat::RematReport& report) {
  xla::remat::GpuPipelineFigures& gpu = report.gpu_pipeline.emplace();
  gpu.heap_sim_at_hook_before_bytes = report.heap_sim_before_bytes;
  gpu.heap_sim_at_hook_after_bytes = report.heap_sim_after_bytes;
  gpu.allocation_at_hook_before_bytes = report.allocation_before_bytes;
  gpu.allocation_at_hook_after_bytes = report.allocation_after_bytes;
  report.heap_sim_before_bytes = baseline.heap_sim_bytes;
  report.buffer_assignment_before_bytes = baseline.assigned.total_bytes;
  gpu.baseline = baseline.counts;
  if (optimized == nullptr) {
    report.heap_sim_after_bytes = baseline.heap_sim_bytes;
    report.buffer_assignment_after_bytes = baseline.assigned.total_bytes;
    gpu.final = baseline.counts;
  } else {
    TF_ASSIGN_OR_RETURN(report.heap_sim_after_bytes,
                        pipeline.HeapSimulatorPeak(*optimized));
    TF_ASSIGN_OR_RETURN(BufferAssignmentFigures after,
                        pipeline.AssignBuffers(*optimized));
    report.buffer_assignment_after_bytes = after.total_bytes;
    gpu.final = CountTupleProducers(*optimized);
  }
  // What the GPU allocates is the figure (memory_figure.h); HeapSimulator's
  // stays in the report as the second one.
  report.allocation_before_bytes = report.buffer_assignment_before_bytes;
  report.allocation_after_bytes = report.buffer_assignment_after_bytes;
  // The report's budget: a relative one (0.5x) became bytes inside the pass,
  // while the options' memory limit here is still 0.
  report.budget_met = report.budget_bytes == 0 ||
                      report.allocation_after_bytes <= report.budget_bytes;
  report.instructions_before = gpu.baseline.instructions;
  report.instructions_after = gpu.final.instructions;
  report.multi_output_fusions = gpu.final.multi_output_fusions;
  return absl::OkStatus();
}

// One run of the pass on `at_hook` (the module as the hook sees it), the
// pipeline's rest after it, and the report with the final figures.
struct PassRun {
  xla::remat::RematReport report;
  // The pipeline's module after the pass; null where the pass changed
  // nothing (it is then the baseline's).
  std::unique_ptr<xla::HloModule> optimized;
};

absl::StatusOr<PassRun> RunPassFromHook(GpuPipeline& pipeline,
                                        std::unique_ptr<xla::HloModule> at_hook,
                                        const xla::remat::RematOptions& options,
                                        const BaselineFigures& baseline) {
  xla::remat::RematerializationPass pass(options, pipeline.size_fn(),
                                         pipeline.alias_info());
  TF_ASSIGN_OR_RETURN(bool changed, pipeline.RunHookPass(at_hook.get(), &pass));
  PassRun run;
  run.report = pass.last_report();
  if (run.report.module.empty()) {
    return absl::InternalError("the pass did not run in the GPU pipeline");
  }
  if (changed) {
    // Unchanged, the rest of the pipeline would rebuild the baseline.
    TF_RETURN_IF_ERROR(pipeline.RunPostSchedulingFromHook(at_hook.get()));
    TF_RETURN_IF_ERROR(CheckValid(at_hook.get()));
    run.optimized = std::move(at_hook);
  }
  TF_RETURN_IF_ERROR(
      SetFinalFigures(pipeline, baseline, run.optimized.get(), run.report));
  return run;
}

// Whether the capped run answers anything the first did not: the first
// spent more than the cap, whether it met the budget or not. A first plan
// within the cap that misses the budget is the lowest the uncapped search
// reaches with moves the capped one may also make; the capped search is
// taken to miss too (it missed on all 42 such probes of the fit table; on
// DenseNet-121 it ended 0.45-1.1 GB above the uncapped plan, once 0.05 GB
// below), so it is not run.
bool NeedsCappedRun(const xla::remat::RematReport& first, double cap) {
  const double extra = first.flops_after - first.flops_before;
  return extra > cap * first.flops_before;
}

// What is live at the peak of the pipeline's module without (`baseline`) and
// with (`optimized`) the pass, by the target's alias rules, beside what the
// GPU allocates for each (the report's figures).
absl::Status ExplainPeaks(GpuPipeline& pipeline, const xla::HloModule& baseline,
                          const xla::HloModule& optimized,
                          const xla::remat::RematReport& report, int top) {
  TF_ASSIGN_OR_RETURN(
      PeakBreakdown before,
      ExplainPeak(baseline, pipeline.size_fn(), top, pipeline.alias_info()));
  TF_ASSIGN_OR_RETURN(
      PeakBreakdown after,
      ExplainPeak(optimized, pipeline.size_fn(), top, pipeline.alias_info()));
  before.assigned_bytes = report.buffer_assignment_before_bytes;
  after.assigned_bytes = report.buffer_assignment_after_bytes;
  WriteUserMessage(FormatPeakBreakdown(before, "before") +
                   FormatPeakBreakdown(after, "after"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<xla::remat::RematReport> RunGpuPath(
    std::unique_ptr<xla::HloModule> module, xla::remat::RematOptions options,
    const GpuCliArgs& args) {
  // As the GPU hook runs the pass: after copy insertion and the scheduler,
  // keeping their order unless a scheduler is named.
  options = xla::remat::GpuHookOptions(std::move(options));
  TF_ASSIGN_OR_RETURN(ConfiguredPipeline configured,
                      ConfigurePipeline(options, args));
  GpuPipeline& pipeline = *configured.pipeline;
  if (!args.capped_report.empty()) std::filesystem::remove(args.capped_report);

  std::unique_ptr<xla::HloModule> input;
  if (!args.wheel_reference_out.empty()) input = module->Clone("");
  TF_ASSIGN_OR_RETURN(ScheduledGpuModule scheduled,
                      pipeline.CompileAndSchedule(std::move(module)));
  // The pipeline up to the hook is the same with and without the pass (and
  // XLA's own rematerialization in it costs seconds): run it once.
  TF_RETURN_IF_ERROR(pipeline.RunPostSchedulingToHook(
      scheduled.module.get(), scheduled.scheduler_mem_limit));
  std::unique_ptr<xla::HloModule> baseline = scheduled.module->Clone("");
  TF_RETURN_IF_ERROR(pipeline.RunPostSchedulingFromHook(baseline.get()));
  if (!args.baseline_out.empty()) {
    TF_RETURN_IF_ERROR(WriteModule(args.baseline_out, *baseline));
  }
  TF_ASSIGN_OR_RETURN(BaselineFigures baseline_figures,
                      MeasureBaseline(pipeline, *baseline));

  std::unique_ptr<xla::HloModule> at_hook_again;
  if (args.capped_rerun >= 0) at_hook_again = scheduled.module->Clone("");
  TF_ASSIGN_OR_RETURN(PassRun run,
                      RunPassFromHook(pipeline, std::move(scheduled.module),
                                      options, baseline_figures));
  const xla::HloModule& optimized =
      run.optimized != nullptr ? *run.optimized : *baseline;
  xla::remat::RematReport& report = run.report;
  auto describe = [&](xla::remat::RematReport& r) {
    r.platform = "gpu";
    r.gpu_target = configured.target_name;
    r.gpu_pipeline->scheduler_mem_limit_bytes = scheduled.scheduler_mem_limit;
    r.gpu_pipeline->disabled_passes = configured.disabled_passes;
    r.gpu_pipeline->autotune_results = args.autotune_results;
    r.gpu_pipeline->autotune_hits = scheduled.autotune_hits;
    r.gpu_pipeline->autotune_misses = scheduled.autotune_misses;
    r.gpu_pipeline->device_memory_bytes = configured.device_memory_bytes;
    r.gpu_pipeline->compute_capability_major =
        configured.compute_capability_major;
  };
  describe(report);

  if (at_hook_again != nullptr && NeedsCappedRun(report, args.capped_rerun)) {
    xla::remat::RematOptions capped = options;
    capped.max_extra_flops_fraction = args.capped_rerun;
    // The first run's files stay the first run's.
    capped.frontier_path.clear();
    capped.frontier_cache_dir.clear();  // another cap: another frontier
    capped.export_graph_path.clear();
    capped.dump_dir.clear();
    TF_ASSIGN_OR_RETURN(PassRun second,
                        RunPassFromHook(pipeline, std::move(at_hook_again),
                                        capped, baseline_figures));
    describe(second.report);
    TF_RETURN_IF_ERROR(WriteText(args.capped_report, second.report.ToJson()));
  }

  if (args.explain_peak_top > 0) {
    TF_RETURN_IF_ERROR(ExplainPeaks(pipeline, *baseline, optimized, report,
                                    args.explain_peak_top));
  }
  if (!args.output.empty()) {
    TF_RETURN_IF_ERROR(WriteModule(args.output, optimized));
  }
  if (input != nullptr) {
    TF_ASSIGN_OR_RETURN(report.gpu_pipeline->wheel_reference,
                        WheelReference(pipeline, std::move(input), *baseline,
                                       args.wheel_reference_out));
  }
  return report;
}

}  // namespace hlo_remat
