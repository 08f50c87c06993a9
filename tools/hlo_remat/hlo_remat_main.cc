// hlo-remat: runs the rematerialization pass on an HLO text file.
//
//   hlo-remat IN.hlo [-o OUT.hlo] [--report OUT.json] [--dump-dir DIR]
//             [--check-numerics] [--time N] [--xla_rematerialization_...=...]
//   hlo-remat --version   (the build fingerprint sweeps record)
//
// Flags are also read from XLA_FLAGS; the command line wins. Exit codes: 0
// success (whether the budget was met or not: the report says), 2 bad flags
// or unreadable/malformed HLO, 1 an internal failure of the pass.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "gpu_cli.h"
#include "hlo_remat_build.h"
#include "numerics_check.h"
#include "peak_breakdown.h"
#include "step_time.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/parser/hlo_parser.h"
#include "xla/service/hlo_verifier.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_pass.h"
#include "xla/service/remat/size_function.h"

namespace {

constexpr char kUsage[] =
    "usage: hlo-remat IN.hlo [-o OUT.hlo] [--report OUT.json] "
    "[--dump-dir DIR] [--size-function plain|tiled|tiled:RxC] "
    "[--check-numerics [--numerics-reference REF.hlo]] [--time N] "
    "[--explain-peak N] "
    "[--after-copy-insertion] "
    "[--platform cpu|gpu [--gpu-target NAME | --gpu-target-file F] "
    "[--baseline-out F] [--wheel-reference-out F] "
    "[--gpu-disable-passes A,B]] "
    "[--xla_rematerialization_*=...]\n"
    "flags: ";

struct CliArgs {
  std::string input;
  std::string output;
  std::string report;
  std::string dump_dir;
  std::string size_function = "plain";
  bool check_numerics = false;
  // Run as the GPU hook does, on a module copy insertion has already seen.
  bool after_copy_insertion = false;
  // Compare against this module instead of the input (tests the checker).
  std::string numerics_reference;
  // Runs per module for the step time (--time N); empty: not timed.
  std::string time_runs;
  // Largest values live at the HeapSimulator peak, before and after
  // (--explain-peak N); empty: not printed.
  std::string explain_peak;
  std::vector<std::string> remat_flags;
  // --platform gpu: the input is pre-optimization HLO, compiled for a GPU
  // without one (gpu_cli.h).
  std::string platform = "cpu";
  hlo_remat::GpuCliArgs gpu;
};

int Fail(int code, const std::string& message) {
  std::cerr << "hlo-remat: " << message << "\n";
  return code;
}

absl::StatusOr<CliArgs> ParseArgs(int argc, char** argv) {
  CliArgs args;
  // Options that take the next argument as their value.
  const std::pair<const char*, std::string*> valued[] = {
      {"-o", &args.output},
      {"--output", &args.output},
      {"--report", &args.report},
      {"--dump-dir", &args.dump_dir},
      {"--size-function", &args.size_function},
      {"--numerics-reference", &args.numerics_reference},
      {"--time", &args.time_runs},
      {"--explain-peak", &args.explain_peak},
      {"--platform", &args.platform},
      {"--gpu-target", &args.gpu.target},
      {"--gpu-target-file", &args.gpu.target_file},
      {"--baseline-out", &args.gpu.baseline_out},
      {"--wheel-reference-out", &args.gpu.wheel_reference_out},
      {"--gpu-disable-passes", &args.gpu.disable_passes},
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string* target = nullptr;
    for (const auto& [name, field] : valued) {
      if (a == name) target = field;
    }
    if (target != nullptr) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat(a, " needs a value"));
      }
      *target = argv[++i];
      if (a == "--numerics-reference") args.check_numerics = true;
    } else if (a == "--check-numerics") {
      args.check_numerics = true;
    } else if (a == "--after-copy-insertion") {
      args.after_copy_insertion = true;
    } else if (absl::StartsWith(a, "--xla_")) {
      args.remat_flags.push_back(a);
    } else if (absl::StartsWith(a, "-")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", a));
    } else if (args.input.empty()) {
      args.input = a;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("more than one input file: ", args.input, " and ", a));
    }
  }
  if (args.input.empty()) {
    return absl::InvalidArgumentError("no input HLO file given");
  }
  if (args.platform != "cpu" && args.platform != "gpu") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--platform=", args.platform, " is not valid; valid: cpu, gpu"));
  }
  const bool gpu_options = !args.gpu.target.empty() ||
                           !args.gpu.target_file.empty() ||
                           !args.gpu.baseline_out.empty() ||
                           !args.gpu.wheel_reference_out.empty() ||
                           !args.gpu.disable_passes.empty();
  if (args.platform == "cpu" && gpu_options) {
    return absl::InvalidArgumentError(
        "--gpu-target, --gpu-target-file, --baseline-out, "
        "--wheel-reference-out and --gpu-disable-passes need --platform gpu");
  }
  if (args.platform == "gpu" &&
      (args.check_numerics || !args.time_runs.empty())) {
    // Both run modules on XLA:CPU; a GPU-compiled module does not run there.
    return absl::InvalidArgumentError(
        "--check-numerics and --time are not available with --platform gpu");
  }
  if (args.platform == "gpu" && !args.explain_peak.empty()) {
    // It simulates with the CPU alias rules.
    return absl::InvalidArgumentError(
        "--explain-peak is not available with --platform gpu");
  }
  return args;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

// XLA's messages span lines; the CLI promises one line on stderr.
std::string OneLine(absl::string_view message) {
  std::string out(message);
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  return out;
}

absl::StatusOr<std::unique_ptr<xla::HloModule>> ReadModule(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::unique_ptr<xla::HloModule>> module =
      xla::ParseAndReturnUnverifiedModule(text.str());
  if (!module.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": malformed HLO: ", OneLine(module.status().message())));
  }
  // Parsing checks syntax only; reject what XLA would reject before any
  // pass touches it, so bad input is an error and never a crash.
  xla::HloVerifier verifier(/*layout_sensitive=*/false,
                            /*allow_mixed_precision=*/true);
  absl::Status verified = verifier.Run(module->get()).status();
  if (verified.ok() && (*module)->has_schedule()) {
    verified = (*module)->schedule().Verify();
  }
  if (!verified.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": invalid HLO: ", OneLine(verified.message())));
  }
  return module;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--version") {
    // The sweep records this, and refuses to mix results of two builds.
    std::cout << "hlo-remat " << HLO_REMAT_BUILD_FINGERPRINT << "\n";
    return 0;
  }
  if (argc >= 2 && (std::string(argv[1]) == "--help" ||
                    std::string(argv[1]) == "-h")) {
    std::cout << kUsage
              << absl::StrJoin(xla::remat::RematFlagNames(), ", ") << "\n";
    return 0;
  }
  absl::StatusOr<CliArgs> args = ParseArgs(argc, argv);
  if (!args.ok()) return Fail(2, std::string(args.status().message()));

  xla::remat::RematOptions options;
  options.enabled = true;  // implied by the CLI
  if (const char* env = std::getenv("XLA_FLAGS")) {
    absl::Status s = xla::remat::ApplyRematFlagsFromString(env, options);
    if (!s.ok()) return Fail(2, absl::StrCat("XLA_FLAGS: ", s.message()));
  }
  for (const std::string& flag : args->remat_flags) {
    absl::Status s = xla::remat::ApplyRematFlag(flag, options);
    if (absl::IsNotFound(s)) {
      return Fail(2, absl::StrCat("unknown flag ", flag, "; known: ",
                                  absl::StrJoin(xla::remat::RematFlagNames(),
                                                ", ")));
    }
    if (!s.ok()) return Fail(2, std::string(s.message()));
  }
  options.enabled = true;
  options.dump_dir = args->dump_dir;
  if (args->after_copy_insertion) {
    options = xla::remat::OptionsAfterCopyInsertion(std::move(options));
  }

  int time_runs = 0;
  if (!args->time_runs.empty()) {
    absl::StatusOr<int> runs = hlo_remat::ParseRunCount(args->time_runs);
    if (!runs.ok()) return Fail(2, std::string(runs.status().message()));
    time_runs = *runs;
  }
  int explain_top = 0;
  if (!args->explain_peak.empty() &&
      (!absl::SimpleAtoi(args->explain_peak, &explain_top) ||
       explain_top < 1)) {
    return Fail(2, absl::StrCat("--explain-peak=", args->explain_peak,
                                " is not valid; give a count of values >= 1"));
  }
  absl::StatusOr<xla::remat::SizeFunction> size_fn =
      xla::remat::ParseSizeFunction(args->size_function);
  if (!size_fn.ok()) return Fail(2, std::string(size_fn.status().message()));

  absl::StatusOr<std::unique_ptr<xla::HloModule>> module =
      ReadModule(args->input);
  if (!module.ok()) return Fail(2, std::string(module.status().message()));
  std::unique_ptr<xla::HloModule> original;
  if (!args->numerics_reference.empty()) {
    absl::StatusOr<std::unique_ptr<xla::HloModule>> reference =
        ReadModule(args->numerics_reference);
    if (!reference.ok()) {
      return Fail(2, std::string(reference.status().message()));
    }
    original = std::move(*reference);
  } else if (args->check_numerics || !args->time_runs.empty()) {
    original = (*module)->Clone("");
  }

  // Before the pass: on the module as given (a module without a schedule
  // has no peak yet).
  std::string explained;
  if (explain_top > 0 && (*module)->has_schedule()) {
    absl::StatusOr<hlo_remat::PeakBreakdown> before =
        hlo_remat::ExplainPeak(**module, *size_fn, explain_top);
    if (!before.ok()) return Fail(1, std::string(before.status().message()));
    explained = hlo_remat::FormatPeakBreakdown(*before, "before");
  }

  absl::StatusOr<xla::remat::RematReport> report;
  if (args->platform == "gpu") {
    // The GPU path writes its own outputs: its module is the compiled one.
    args->gpu.output = std::exchange(args->output, "");
    report = hlo_remat::RunGpuPath(std::move(*module), options, args->gpu);
  } else {
    report = xla::remat::RunRemat(module->get(), options, *size_fn);
  }
  if (!report.ok()) {
    const bool user_error = absl::IsUnimplemented(report.status()) ||
                            absl::IsFailedPrecondition(report.status()) ||
                            absl::IsInvalidArgument(report.status());
    return Fail(user_error ? 2 : 1, std::string(report.status().message()));
  }
  if (args->check_numerics) {
    absl::StatusOr<hlo_remat::NumericsResult> numerics =
        hlo_remat::CompareNumerics(*original, **module, /*seed=*/42);
    if (!numerics.ok()) {
      report->numerics = "skipped";
      report->AddNote(
          absl::StrCat("numerics not run: ", numerics.status().message()));
    } else {
      report->numerics = numerics->equal ? "equal" : "differ";
      if (!numerics->equal) {
        report->note = absl::StrCat(report->note, "; numerics: ",
                                    numerics->detail);
      }
    }
  }
  if (time_runs > 0) {
    absl::StatusOr<hlo_remat::StepTimes> times =
        hlo_remat::MeasureStepTimes(*original, **module, time_runs);
    if (!times.ok()) {
      report->AddNote(absl::StrCat("step time not measured: ",
                                   times.status().message()));
    } else {
      report->step_time_before_s = times->before_s;
      report->step_time_after_s = times->after_s;
      report->step_time_ratio = times->after_s / times->before_s;
    }
  }
  if (explain_top > 0) {
    absl::StatusOr<hlo_remat::PeakBreakdown> after =
        hlo_remat::ExplainPeak(**module, *size_fn, explain_top);
    if (!after.ok()) return Fail(1, std::string(after.status().message()));
    std::cerr << explained
              << hlo_remat::FormatPeakBreakdown(*after, "after");
  }
  if (!args->output.empty() &&
      !WriteFile(args->output, (*module)->ToString())) {
    return Fail(2, absl::StrCat(args->output, ": cannot write"));
  }
  const std::string json = report->ToJson();
  if (!args->report.empty()) {
    if (!WriteFile(args->report, json)) {
      return Fail(2, absl::StrCat(args->report, ": cannot write"));
    }
  } else {
    std::cout << json;
  }
  std::fprintf(stderr,
               "hlo-remat: %s %s/%s: peak %lld -> %lld bytes (HeapSimulator), "
               "budget %lld %s, +%lld instructions, numerics %s\n",
               report->module.c_str(), report->algorithm.c_str(),
               report->scheduler_chosen.c_str(),
               static_cast<long long>(report->heap_sim_before_bytes),
               static_cast<long long>(report->heap_sim_after_bytes),
               static_cast<long long>(report->budget_bytes),
               report->budget_met ? "met" : "NOT met",
               static_cast<long long>(report->instructions_added),
               report->numerics.c_str());
  return report->numerics == "differ" ? 1 : 0;
}
