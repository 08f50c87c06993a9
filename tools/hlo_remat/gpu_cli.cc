#include "gpu_cli.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gpu_pipeline.h"
#include "gpu_target.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/parser/hlo_parser.h"
#include "xla/service/hlo_verifier.h"
#include "xla/service/remat/remat_hooks.h"
#include "xla/service/remat/remat_pass.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace hlo_remat {
namespace {

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out)
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot write"));
  return absl::OkStatus();
}

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

std::string Counts(const TupleProducers& counts) {
  return absl::StrCat(
      "{\"instructions\": ", counts.instructions,
      ", \"fusions\": ", counts.fusions,
      ", \"multi_output_fusions\": ", counts.multi_output_fusions,
      ", \"tuple_custom_calls\": ", counts.tuple_custom_calls, "}");
}

// The wheel's own compile of `input`, and how it compares with `baseline`.
absl::StatusOr<std::string> WheelReferenceJson(
    GpuPipeline& pipeline, std::unique_ptr<xla::HloModule> input,
    const xla::HloModule& baseline, const std::string& out_path) {
  const std::string dump_dir = absl::StrCat(out_path, ".dump");
  std::filesystem::remove_all(dump_dir);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<xla::HloModule> reference,
                      pipeline.WheelReference(std::move(input), dump_dir));
  TF_RETURN_IF_ERROR(WriteText(out_path, reference->ToString()));
  TF_ASSIGN_OR_RETURN(int64_t peak, pipeline.HeapSimulatorPeak(*reference));
  TF_ASSIGN_OR_RETURN(BufferAssignmentFigures assigned,
                      pipeline.AssignBuffers(*reference));
  // The same HLO, names aside (a second compile in one process numbers
  // fusions and clones differently): both printed without names or metadata,
  // in schedule order, after the same text round trip.
  TF_ASSIGN_OR_RETURN(std::unique_ptr<xla::HloModule> ours,
                      xla::ParseAndReturnUnverifiedModule(baseline.ToString()));
  const xla::HloPrintOptions print = xla::HloPrintOptions::Fingerprint();
  const bool text_equal = ours->ToString(print) == reference->ToString(print);
  return absl::StrCat("{\"heap_sim_bytes\": ", peak,
                      ", \"buffer_assignment_bytes\": ", assigned.total_bytes,
                      ", \"counts\": ", Counts(CountTupleProducers(*reference)),
                      ", \"text_equal\": ", text_equal ? "true" : "false", "}");
}

}  // namespace

absl::StatusOr<xla::remat::RematReport> RunGpuPath(
    std::unique_ptr<xla::HloModule> module, xla::remat::RematOptions options,
    const GpuCliArgs& args) {
  stream_executor::GpuTargetConfigProto target;
  std::string target_name =
      args.target.empty() ? kDefaultGpuTarget : args.target;
  if (!args.target_file.empty()) {
    TF_ASSIGN_OR_RETURN(target, GpuTargetFromFile(args.target_file));
    target_name = args.target_file;
  } else {
    TF_ASSIGN_OR_RETURN(target, GpuTargetByName(target_name));
  }
  // As the GPU hook runs the pass: after copy insertion and the scheduler,
  // keeping their order unless a scheduler is named.
  options = xla::remat::GpuHookOptions(std::move(options));
  std::vector<std::string> disabled;
  // As the in-tree hook does (remat_hooks.h).
  if (options.disable_cuda_fusions) {
    disabled = xla::remat::MultiOutputFusionPassNames();
  }
  for (absl::string_view pass :
       absl::StrSplit(args.disable_passes, ',', absl::SkipEmpty())) {
    disabled.emplace_back(pass);
  }
  absl::StatusOr<std::unique_ptr<GpuPipeline>> created =
      GpuPipeline::Create(target, disabled);
  if (absl::IsInvalidArgument(created.status())) {
    return absl::InvalidArgumentError(absl::StrCat(
        args.target_file.empty() ? "--gpu-target=" : "--gpu-target-file ",
        target_name, ": ", created.status().message()));
  }
  TF_ASSIGN_OR_RETURN(std::unique_ptr<GpuPipeline> pipeline,
                      std::move(created));

  std::unique_ptr<xla::HloModule> input;
  if (!args.wheel_reference_out.empty()) input = module->Clone("");
  TF_ASSIGN_OR_RETURN(ScheduledGpuModule scheduled,
                      pipeline->CompileAndSchedule(std::move(module)));
  std::unique_ptr<xla::HloModule> baseline = scheduled.module->Clone("");
  TF_RETURN_IF_ERROR(pipeline->RunPostScheduling(
      baseline.get(), scheduled.scheduler_mem_limit, /*extra_pass=*/nullptr));
  if (!args.baseline_out.empty()) {
    TF_RETURN_IF_ERROR(WriteText(args.baseline_out, baseline->ToString()));
  }

  xla::HloModule* optimized = scheduled.module.get();
  xla::remat::RematerializationPass pass(options, pipeline->size_fn(),
                                         pipeline->alias_info());
  TF_RETURN_IF_ERROR(pipeline->RunPostScheduling(
      optimized, scheduled.scheduler_mem_limit, &pass));
  TF_RETURN_IF_ERROR(CheckValid(optimized));

  xla::remat::RematReport report = pass.last_report();
  if (report.module.empty()) {
    return absl::InternalError("the pass did not run in the GPU pipeline");
  }
  report.platform = "gpu";
  report.gpu_target = target_name;
  // The pass measured the module at the hook; the final figures are the
  // pipeline's, without and with it.
  report.gpu_fields.emplace_back("heap_sim_at_hook_before_bytes",
                                 absl::StrCat(report.heap_sim_before_bytes));
  report.gpu_fields.emplace_back("heap_sim_at_hook_after_bytes",
                                 absl::StrCat(report.heap_sim_after_bytes));
  report.gpu_fields.emplace_back("allocation_at_hook_before_bytes",
                                 absl::StrCat(report.allocation_before_bytes));
  report.gpu_fields.emplace_back("allocation_at_hook_after_bytes",
                                 absl::StrCat(report.allocation_after_bytes));
  TF_ASSIGN_OR_RETURN(report.heap_sim_before_bytes,
                      pipeline->HeapSimulatorPeak(*baseline));
  TF_ASSIGN_OR_RETURN(report.heap_sim_after_bytes,
                      pipeline->HeapSimulatorPeak(*optimized));
  TF_ASSIGN_OR_RETURN(BufferAssignmentFigures before,
                      pipeline->AssignBuffers(*baseline));
  TF_ASSIGN_OR_RETURN(BufferAssignmentFigures after,
                      pipeline->AssignBuffers(*optimized));
  report.buffer_assignment_before_bytes = before.total_bytes;
  report.buffer_assignment_after_bytes = after.total_bytes;
  // What the GPU allocates is the figure (memory_figure.h); HeapSimulator's
  // stays in the report as the second one.
  report.allocation_before_bytes = before.total_bytes;
  report.allocation_after_bytes = after.total_bytes;
  // The report's budget: a relative one (0.5x) became bytes inside the pass,
  // while options.memory_limit_bytes here is still 0.
  report.budget_met = report.budget_bytes == 0 ||
                      report.allocation_after_bytes <= report.budget_bytes;
  const TupleProducers counts_before = CountTupleProducers(*baseline);
  const TupleProducers counts_after = CountTupleProducers(*optimized);
  report.instructions_before = counts_before.instructions;
  report.instructions_after = counts_after.instructions;
  report.multi_output_fusions = counts_after.multi_output_fusions;
  report.gpu_fields.emplace_back("gpu_baseline", Counts(counts_before));
  report.gpu_fields.emplace_back("gpu_final", Counts(counts_after));
  report.gpu_fields.emplace_back("scheduler_mem_limit_bytes",
                                 absl::StrCat(scheduled.scheduler_mem_limit));
  std::string disabled_json = "[";
  for (size_t i = 0; i < disabled.size(); ++i) {
    absl::StrAppend(&disabled_json, i ? ", " : "", "\"", disabled[i], "\"");
  }
  report.gpu_fields.emplace_back("disabled_passes", disabled_json + "]");

  if (!args.output.empty()) {
    TF_RETURN_IF_ERROR(WriteText(args.output, optimized->ToString()));
  }
  if (input != nullptr) {
    TF_ASSIGN_OR_RETURN(
        std::string reference,
        WheelReferenceJson(*pipeline, std::move(input), *baseline,
                           args.wheel_reference_out));
    report.gpu_fields.emplace_back("wheel_reference", reference);
  }
  return report;
}

}  // namespace hlo_remat
