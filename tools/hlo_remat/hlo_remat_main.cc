// hlo-remat-engine: runs the rematerialization pass on an HLO text file.
// Users run it through hlo-remat (launcher_main.cc), which hides what
// TensorFlow prints and turns an abort into a short message.
//
//   hlo-remat IN.hlo [-o OUT.hlo] [--report OUT.json] [options]
//             [--xla_rematerialization_...=...]
//
// Flags are also read from XLA_FLAGS; the command line wins. Exit codes (also
// in --help): 0 done, whether the budget was met or not (the report says);
// 2 bad options or unreadable, malformed or unsuitable HLO; 1 a failure of the
// pass, or numerics that differ after it; 3 the budget missed, with
// --fail-if-missed.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cli_args.h"
#include "engine_channel.h"
#include "gpu_cli.h"
#include "gpu_target.h"
#include "hlo_remat_build.h"
#include "input_check.h"
#include "module_output.h"
#include "numerics_check.h"
#include "peak_breakdown.h"
#include "step_time.h"
#include "tracker_gap.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/memory_figure.h"
#include "xla/service/remat/remat_flag_table.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_pass.h"
#include "xla/service/remat/remat_report.h"
#include "xla/service/remat/size_function.h"
#include "xla/tsl/platform/statusor.h"

namespace {

using hlo_remat::CliArgs;
using hlo_remat::Platform;

int Fail(int code, absl::string_view message) {
  hlo_remat::WriteUserMessage(absl::StrCat("hlo-remat: ", message, "\n"));
  return code;
}

// XLA_FLAGS first, then the command line.
absl::StatusOr<xla::remat::RematOptions> OptionsFor(const CliArgs& args) {
  xla::remat::RematOptions options;
  if (const char* env = std::getenv("XLA_FLAGS")) {
    absl::Status s = xla::remat::ApplyRematFlagsFromString(env, options);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("XLA_FLAGS: ", s.message()));
    }
  }
  for (const std::string& flag : args.remat_flags) {
    absl::Status s = xla::remat::ApplyRematFlag(flag, options);
    if (absl::IsNotFound(s)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag ", flag,
          "; known: ", absl::StrJoin(xla::remat::RematFlagNames(), ", ")));
    }
    if (!s.ok()) return s;
  }
  options.enabled = true;  // implied by the CLI
  options.dump_dir = args.dump_dir;
  options.export_graph_path = args.export_graph;
  options.frontier_path = args.frontier;
  options.planning_threads = args.planning_threads;
  if (args.judge_whole_copies) {
    options.judging_copy = xla::remat::JudgingCopyKind::kWhole;
  }
  options.check_peak_bound = args.check_peak_bound;
  // A kept frontier (--xla_rematerialization_frontier_cache) is of this build.
  options.engine_revision = HLO_REMAT_BUILD_FINGERPRINT;
  if (args.after_copy_insertion) {
    options = xla::remat::OptionsAfterCopyInsertion(std::move(options));
  }
  return options;
}

// Numerics and step time, both on XLA:CPU; a failure to run them is a note.
void MeasureOnCpu(const CliArgs& args, const xla::HloModule& original,
                  const xla::HloModule& after,
                  xla::remat::RematReport& report) {
  if (args.check_numerics) {
    absl::StatusOr<hlo_remat::NumericsResult> numerics =
        hlo_remat::CompareNumerics(original, after, /*seed=*/42);
    if (!numerics.ok()) {
      report.numerics = xla::remat::Numerics::kSkipped;
      report.AddNote(
          absl::StrCat("numerics not run: ", numerics.status().message()));
    } else {
      report.numerics = numerics->equal ? xla::remat::Numerics::kEqual
                                        : xla::remat::Numerics::kDiffer;
      if (!numerics->equal)
        report.AddNote(absl::StrCat("numerics: ", numerics->detail));
    }
  }
  if (args.time_runs > 0) {
    absl::StatusOr<hlo_remat::StepTimes> times =
        hlo_remat::MeasureStepTimes(original, after, args.time_runs);
    if (!times.ok()) {
      report.AddNote(
          absl::StrCat("step time not measured: ", times.status().message()));
    } else {
      report.step_time_before_s = times->before_s;
      report.step_time_after_s = times->after_s;
      report.step_time_ratio = times->after_s / times->before_s;
    }
  }
}

std::string SummaryLine(const xla::remat::RematReport& report) {
  std::string budget = report.budget_bytes > 0
                           ? absl::StrCat("budget ", report.budget_bytes, " ",
                                          report.budget_met ? "met" : "NOT met")
                           : "no budget (as low as it goes)";
  // The report's own words: allocation_*_bytes, floor_bytes, budget_bytes,
  // extra FLOPs (flops_after over flops_before), instructions_added.
  const double extra_flops_pct =
      report.flops_before > 0
          ? 100 * (report.flops_after - report.flops_before) /
                report.flops_before
          : 0;
  return absl::StrFormat(
      "hlo-remat: %s %s/%s: allocation %d -> %d bytes (%s), floor %d, %s, "
      "%+.1f%% FLOPs, %d instructions added, numerics %s\n",
      hlo_remat::ShownName(report.module), report.algorithm,
      report.scheduler_chosen, report.allocation_before_bytes,
      report.allocation_after_bytes,
      xla::remat::MemoryFigureName(report.memory_figure), report.floor_bytes,
      budget, extra_flops_pct, report.instructions_added,
      xla::remat::NumericsName(report.numerics));
}

// --explain-peak on a CPU module: the figure's peak, and beside it the
// planner's own count, where the two part being what the planner cannot see.
absl::StatusOr<std::string> ExplainOnCpu(
    const xla::HloModule& module, const xla::remat::SizeFunction& size_fn,
    const xla::remat::RematOptions& options, int top, absl::string_view label) {
  TF_ASSIGN_OR_RETURN(hlo_remat::PeakBreakdown peak,
                      hlo_remat::ExplainPeakOnCpu(module, size_fn, top));
  TF_ASSIGN_OR_RETURN(
      hlo_remat::TrackerGap gap,
      hlo_remat::FindTrackerGap(
          module, size_fn,
          xla::remat::TrackerAliasedOutputs(options.memory_figure.figure),
          top));
  return hlo_remat::FormatPeakBreakdown(peak, label) +
         hlo_remat::FormatTrackerGap(gap, label);
}

// Everything after the arguments are understood; returns the exit code.
int Run(CliArgs& args) {
  hlo_remat::MarkInput(args.input);
  absl::StatusOr<xla::remat::RematOptions> options = OptionsFor(args);
  if (!options.ok()) return Fail(2, options.status().message());
  absl::StatusOr<xla::remat::SizeFunction> size_fn =
      xla::remat::ParseSizeFunction(args.size_function);
  if (!size_fn.ok()) return Fail(2, size_fn.status().message());

  absl::StatusOr<hlo_remat::InputModule> input =
      hlo_remat::ReadInputModule(args.input, args.platform);
  if (!input.ok()) return Fail(2, input.status().message());
  std::unique_ptr<xla::HloModule> module = std::move(input->module);
  std::unique_ptr<xla::HloModule> original;
  if (!args.numerics_reference.empty()) {
    absl::StatusOr<hlo_remat::InputModule> reference =
        hlo_remat::ReadInputModule(args.numerics_reference, Platform::kCpu);
    if (!reference.ok()) return Fail(2, reference.status().message());
    original = std::move(reference->module);
  } else if (args.check_numerics || args.time_runs > 0) {
    original = module->Clone("");
  }
  hlo_remat::MarkInputAccepted();
  if (!input->warning.empty()) Fail(0, absl::StrCat("note: ", input->warning));

  std::string explained;
  // On GPU the pipeline explains its own modules (gpu_cli.h).
  const bool explain_here =
      args.explain_peak_top > 0 && args.platform != Platform::kGpu;
  if (explain_here && module->has_schedule()) {
    absl::StatusOr<std::string> before = ExplainOnCpu(
        *module, *size_fn, *options, args.explain_peak_top, "before");
    if (!before.ok()) return Fail(1, before.status().message());
    explained = *std::move(before);
  }
  absl::StatusOr<xla::remat::RematReport> report;
  if (args.platform == Platform::kGpu) {
    // The GPU path writes its own outputs: its module is the compiled one.
    args.gpu.output = std::exchange(args.output, "");
    args.gpu.explain_peak_top = args.explain_peak_top;
    report = hlo_remat::RunGpuPath(std::move(module), *options, args.gpu);
  } else {
    report = xla::remat::RunRemat(module.get(), *options, *size_fn);
  }
  if (!report.ok()) {
    const bool user_error = absl::IsUnimplemented(report.status()) ||
                            absl::IsFailedPrecondition(report.status()) ||
                            absl::IsInvalidArgument(report.status());
    return Fail(user_error ? 2 : 1, report.status().message());
  }
  if (original != nullptr) MeasureOnCpu(args, *original, *module, *report);
  if (explain_here) {
    absl::StatusOr<std::string> after = ExplainOnCpu(
        *module, *size_fn, *options, args.explain_peak_top, "after");
    if (!after.ok()) return Fail(1, after.status().message());
    hlo_remat::WriteUserMessage(explained + *after);
  }
  if (!args.output.empty()) {
    absl::Status written = hlo_remat::WriteModule(args.output, *module);
    if (!written.ok()) return Fail(2, written.message());
  }
  const std::string json = report->ToJson();
  if (args.report.empty()) {
    std::cout << json;
  } else if (absl::Status written = hlo_remat::WriteText(args.report, json);
             !written.ok()) {
    return Fail(2, written.message());
  }
  hlo_remat::WriteUserMessage(SummaryLine(*report));
  if (report->numerics == xla::remat::Numerics::kDiffer) return 1;
  return args.fail_if_missed && !report->budget_met ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<CliArgs> args =
      hlo_remat::ParseCliArgs(absl::MakeConstSpan(argv, argc));
  if (!args.ok()) return Fail(2, args.status().message());
  if (args->show_version) {
    // The sweep records this, and refuses to mix results of two builds.
    std::cout << "hlo-remat " << HLO_REMAT_BUILD_FINGERPRINT << "\n";
    return 0;
  }
  if (args->show_help) {
    std::cout << hlo_remat::CliHelp();
    return 0;
  }
  if (!args->resolve_budgets.empty()) {
    std::vector<std::string> bytes;
    for (absl::string_view budget :
         absl::StrSplit(args->resolve_budgets, ',')) {
      absl::StatusOr<int64_t> resolved =
          xla::remat::ResolveBudget(budget, args->memory_before);
      if (!resolved.ok()) return Fail(2, resolved.status().message());
      bytes.push_back(absl::StrCat(*resolved));
    }
    std::cout << "[" << absl::StrJoin(bytes, ", ") << "]\n";
    return 0;
  }
  if (args->list_flags) {
    std::cout << xla::remat::RematFlagTableJson();
    return 0;
  }
  if (args->list_gpu_targets) {
    std::cout << absl::StrJoin(hlo_remat::GpuTargetNames(), "\n") << "\n";
    return 0;
  }
  return Run(*args);
}
