#include "cli_args.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gpu_target.h"
#include "step_time.h"
#include "xla/service/remat/remat_flag_table.h"

namespace hlo_remat {
namespace {

// One option: its name, the word shown for its value ("" for a switch), its
// default as shown, and what it does.
struct OptionDoc {
  const char* name;
  const char* value;
  const char* default_text;
  const char* help;
};

constexpr OptionDoc kOptions[] = {
    {"-o", "OUT.hlo", "not written",
     "write the module after the pass (OUT.pb: as a binary HloModuleProto)"},
    {"--report", "OUT.json", "stdout", "write the JSON report here"},
    {"--dump-dir", "DIR", "none",
     "where the dump_dot and dump_memlog flags write"},
    {"--export-graph", "G.json", "not written",
     "write the scheduled entry as the planner sees it (nodes, bytes, FLOPs, "
     "reads; remat-harness optimum solves it)"},
    {"--frontier", "F.json", "not written",
     "write the memory-compute frontier the budget was answered from: each "
     "aim's plan, its peak by the platform's figure and its extra FLOPs "
     "(remat-harness frontier plots it)"},
    {"--platform", "cpu|gpu", "cpu",
     "cpu: IN is XLA:CPU's scheduled module (*.cpu_after_optimizations.txt); "
     "gpu: IN is pre-optimization HLO (*.before_optimizations.txt), compiled "
     "for --gpu-target without a GPU"},
    {"--gpu-target", "NAME", kDefaultGpuTarget,
     "the GPU to compile for (--list-gpu-targets)"},
    {"--gpu-target-file", "F", "none",
     "a GpuTargetConfigProto text file instead of --gpu-target"},
    {"--baseline-out", "F", "not written",
     "gpu: write the same pipeline's module without the pass (F.pb: as a "
     "binary HloModuleProto)"},
    {"--wheel-reference-out", "F", "not written",
     "gpu: write the wheel's own compile of IN and report its figures"},
    {"--gpu-autotune-results", "F", "none",
     "gpu: XLA autotune results recorded on your GPU "
     "(--xla_gpu_dump_autotune_results_to there): the compile picks those "
     "convolution and GEMM kernels"},
    {"--capped-rerun", "F", "off",
     "gpu: where the plan spends more than F of the step's FLOPs, plan "
     "again from the same compile with the compute cap at F (needs "
     "--capped-report)"},
    {"--capped-report", "R.json", "not written",
     "gpu: where --capped-rerun planned again, that run's JSON report"},
    {"--gpu-disable-passes", "A,B", "none",
     "gpu: more XLA passes to disable in the pipeline"},
    {"--size-function", "plain|tiled|tiled:RxC", "plain",
     "how a value's bytes are counted (cpu)"},
    {"--check-numerics", "", "off",
     "run the module before and after on XLA:CPU and compare outputs (cpu)"},
    {"--numerics-reference", "REF.hlo", "IN",
     "compare with this module instead (implies --check-numerics)"},
    {"--time", "N", "off",
     "time N runs of the step before and after on XLA:CPU (cpu)"},
    {"--planning-threads", "N", "one per core, at most 8",
     "threads the frontier search plans its aims on (the plan does not "
     "depend on it)"},
    {"--judge-whole-copies", "", "off",
     "judge each plan on a whole copy of the module, fused computations "
     "included (slower; the figure is the same: for checking that)"},
    {"--check-peak-bound", "", "off",
     "build every move the peak bound refuses and fail if one raises no "
     "peak (slower; the plan is the same: for checking that)"},
    {"--explain-peak", "N", "off",
     "print the N largest values live at the peak, before and after; on "
     "CPU also the planner's count at its own peak and what only it holds"},
    {"--after-copy-insertion", "", "off",
     "treat IN as the GPU hook sees it (scheduler 'given', live ranges "
     "checked)"},
    {"--fail-if-missed", "", "off",
     "exit 3 when the budget is not met (for CI; the outputs are written)"},
    {"-v", "", "off", "show what TensorFlow and XLA print (hidden by default)"},
    {"--list-gpu-targets", "", "", "print the names --gpu-target accepts"},
    {"--resolve-budgets", "B1,B2,...", "",
     "print the budget flag's values as bytes (a JSON list) for a module of "
     "--memory-before bytes, as the pass resolves them"},
    {"--memory-before", "BYTES", "0",
     "the module's memory before the pass, for --resolve-budgets"},
    {"--list-flags", "", "",
     "print the rematerialization flags as JSON (name, value, default, help, "
     "choices)"},
    {"--version", "", "", "print the build fingerprint"},
    {"--help", "", "", "print this help"},
};

// "--dump_dir" -> "--dump-dir"; the rematerialization flags keep theirs.
std::string Canonical(absl::string_view arg) {
  if (!absl::StartsWith(arg, "--") || absl::StartsWith(arg, "--xla_")) {
    return std::string(arg);
  }
  return absl::StrReplaceAll(arg, {{"_", "-"}});
}

absl::Status Bad(absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(message, " (hlo-remat --help lists the options)"));
}

absl::StatusOr<int> PositiveCount(absl::string_view option,
                                  absl::string_view text) {
  int count = 0;
  if (!absl::SimpleAtoi(text, &count) || count < 1) {
    return Bad(absl::StrCat(option, "=", text,
                            " is not valid; give a whole number >= 1"));
  }
  return count;
}

// Options whose value is a string kept as given.
std::string* StringField(const std::string& name, CliArgs& args) {
  if (name == "-o" || name == "--output") return &args.output;
  if (name == "--report") return &args.report;
  if (name == "--dump-dir") return &args.dump_dir;
  if (name == "--export-graph") return &args.export_graph;
  if (name == "--frontier") return &args.frontier;
  if (name == "--size-function") return &args.size_function;
  if (name == "--resolve-budgets") return &args.resolve_budgets;
  if (name == "--numerics-reference") return &args.numerics_reference;
  if (name == "--gpu-target") return &args.gpu.target;
  if (name == "--gpu-target-file") return &args.gpu.target_file;
  if (name == "--baseline-out") return &args.gpu.baseline_out;
  if (name == "--wheel-reference-out") return &args.gpu.wheel_reference_out;
  if (name == "--gpu-disable-passes") return &args.gpu.disable_passes;
  if (name == "--gpu-autotune-results") return &args.gpu.autotune_results;
  if (name == "--capped-report") return &args.gpu.capped_report;
  return nullptr;
}

// Options that take a value, by their canonical name.
bool TakesValue(const std::string& name) {
  for (const OptionDoc& doc : kOptions) {
    if (name == doc.name) return doc.value[0] != '\0';
  }
  return name == "--output";
}

absl::Status ApplyValued(const std::string& name, const std::string& value,
                         CliArgs& args) {
  if (std::string* field = StringField(name, args)) {
    *field = value;
    if (name == "--numerics-reference") args.check_numerics = true;
    return absl::OkStatus();
  }
  if (name == "--platform") {
    if (value == "cpu") {
      args.platform = Platform::kCpu;
    } else if (value == "gpu") {
      args.platform = Platform::kGpu;
    } else {
      return Bad(
          absl::StrCat("--platform=", value, " is not valid; valid: cpu, gpu"));
    }
    return absl::OkStatus();
  }
  if (name == "--time") {
    absl::StatusOr<int> runs = ParseRunCount(value);
    if (!runs.ok()) return runs.status();
    args.time_runs = *runs;
    return absl::OkStatus();
  }
  if (name == "--memory-before") {
    if (!absl::SimpleAtoi(value, &args.memory_before) ||
        args.memory_before < 0) {
      return Bad(absl::StrCat("--memory-before=", value,
                              " is not valid; give a number of bytes >= 0"));
    }
    return absl::OkStatus();
  }
  if (name == "--planning-threads") {
    absl::StatusOr<int> threads = PositiveCount(name, value);
    if (!threads.ok()) return threads.status();
    args.planning_threads = *threads;
    return absl::OkStatus();
  }
  if (name == "--capped-rerun") {
    double cap = -1;
    if (!absl::SimpleAtod(value, &cap) || !(cap >= 0)) {
      return Bad(absl::StrCat("--capped-rerun=", value,
                              " is not valid; give a share of the step's "
                              "FLOPs >= 0, such as 0.1"));
    }
    args.gpu.capped_rerun = cap;
    return absl::OkStatus();
  }
  if (name == "--explain-peak") {
    absl::StatusOr<int> top = PositiveCount(name, value);
    if (!top.ok()) return top.status();
    args.explain_peak_top = *top;
    return absl::OkStatus();
  }
  return Bad(absl::StrCat("unknown option ", name));
}

absl::Status ApplySwitch(const std::string& name, CliArgs& args) {
  if (name == "--check-numerics") {
    args.check_numerics = true;
  } else if (name == "--after-copy-insertion") {
    args.after_copy_insertion = true;
  } else if (name == "--judge-whole-copies") {
    args.judge_whole_copies = true;
  } else if (name == "--check-peak-bound") {
    args.check_peak_bound = true;
  } else if (name == "--fail-if-missed") {
    args.fail_if_missed = true;
  } else if (name == "--help" || name == "-h") {
    args.show_help = true;
  } else if (name == "--version") {
    args.show_version = true;
  } else if (name == "--list-gpu-targets") {
    args.list_gpu_targets = true;
  } else if (name == "--list-flags") {
    args.list_flags = true;
  } else {
    return Bad(absl::StrCat("unknown option ", name));
  }
  return absl::OkStatus();
}

// What only makes sense on one platform, said before any work is done.
absl::Status CheckPlatformOptions(const CliArgs& args) {
  const bool gpu_options =
      !args.gpu.target.empty() || !args.gpu.target_file.empty() ||
      !args.gpu.baseline_out.empty() || !args.gpu.wheel_reference_out.empty() ||
      !args.gpu.disable_passes.empty() || !args.gpu.autotune_results.empty() ||
      args.gpu.capped_rerun >= 0 || !args.gpu.capped_report.empty();
  if (args.platform == Platform::kCpu && gpu_options) {
    return Bad(
        "--gpu-target, --gpu-target-file, --baseline-out, "
        "--wheel-reference-out, --gpu-disable-passes, "
        "--gpu-autotune-results, --capped-rerun and --capped-report need "
        "--platform gpu");
  }
  if ((args.gpu.capped_rerun >= 0) != !args.gpu.capped_report.empty()) {
    return Bad("--capped-rerun and --capped-report go together");
  }
  if (args.platform == Platform::kGpu &&
      (args.check_numerics || args.time_runs > 0)) {
    // Both run modules on XLA:CPU; a GPU-compiled module does not run there.
    return Bad(
        "--check-numerics and --time are not available with "
        "--platform gpu");
  }
  if (!args.gpu.target.empty()) {
    // Checked here, before the input is read: a typo costs nothing.
    absl::StatusOr<stream_executor::GpuTargetConfigProto> target =
        GpuTargetByName(args.gpu.target);
    if (!target.ok()) return target.status();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CliArgs> ParseCliArgs(absl::Span<char* const> argv) {
  CliArgs args;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string raw = argv[i];
    if (absl::StartsWith(raw, "--xla_")) {
      args.remat_flags.push_back(raw);
      continue;
    }
    // --name=value is accepted for every valued option.
    std::string name = Canonical(raw);
    std::string value;
    bool has_inline_value = false;
    if (absl::StartsWith(name, "--") && name.find('=') != std::string::npos) {
      value = raw.substr(raw.find('=') + 1);  // as typed
      name = name.substr(0, name.find('='));
      has_inline_value = true;
    }
    if (TakesValue(name)) {
      if (!has_inline_value) {
        if (i + 1 >= argv.size()) {
          return Bad(absl::StrCat(name, " needs a value"));
        }
        value = argv[++i];
      }
      if (absl::Status s = ApplyValued(name, value, args); !s.ok()) return s;
    } else if (absl::StartsWith(name, "-") && name.size() > 1) {
      if (has_inline_value) {
        return Bad(absl::StrCat(name, " takes no value"));
      }
      if (absl::Status s = ApplySwitch(name, args); !s.ok()) return s;
    } else if (args.input.empty()) {
      args.input = raw;
    } else {
      return Bad(
          absl::StrCat("more than one input file: ", args.input, " and ", raw));
    }
  }
  if (args.show_help || args.show_version || args.list_gpu_targets ||
      args.list_flags || !args.resolve_budgets.empty()) {
    return args;
  }
  if (args.input.empty()) return Bad("no input HLO file given");
  if (absl::Status s = CheckPlatformOptions(args); !s.ok()) return s;
  return args;
}

std::string CliHelp() {
  std::string out =
      "usage: hlo-remat IN.hlo [options] [--xla_rematerialization_*=...]\n"
      "Rematerializes IN to lower its peak memory; prints a JSON report.\n"
      "Exit codes: 0 done (the report says whether the budget was met), "
      "2 bad input or options, 1 internal failure or numerics that differ, "
      "3 budget not met with --fail-if-missed.\n\noptions:\n";
  for (const OptionDoc& doc : kOptions) {
    std::string left = doc.name;
    if (doc.value[0] != '\0') absl::StrAppend(&left, " ", doc.value);
    if (left.size() < 28) left.resize(28, ' ');
    absl::StrAppend(&out, "  ", left, " ", doc.help);
    if (doc.default_text[0] != '\0') {
      absl::StrAppend(&out, " [default: ", doc.default_text, "]");
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out,
                  "\nrematerialization flags (also read from XLA_FLAGS; the "
                  "command line wins):\n");
  for (const xla::remat::RematFlag& flag : xla::remat::RematFlagTable()) {
    std::string left = absl::StrCat("--", flag.name);
    if (!flag.is_switch()) absl::StrAppend(&left, "=", flag.value_word);
    absl::StrAppend(&out, "  ", left, "\n      ", flag.help,
                    " [default: ", flag.default_text, "]\n");
  }
  return out;
}

}  // namespace hlo_remat
