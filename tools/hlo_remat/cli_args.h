// hlo-remat's command line, parsed once into typed fields, and its help.
//
// Every option is described in one table (cli_args.cc) that both the parser
// and --help read, so a new option cannot be accepted without being
// documented. Options are kebab-case; the underscore spelling is accepted too
// (--dump_dir), as the harness and TensorFlow's scripts use both.
#ifndef HLO_REMAT_CLI_ARGS_H_
#define HLO_REMAT_CLI_ARGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gpu_cli.h"

namespace hlo_remat {

enum class Platform { kCpu, kGpu };

struct CliArgs {
  // What to do instead of running the pass.
  bool show_help = false;
  bool show_version = false;
  bool list_gpu_targets = false;
  bool list_flags = false;
  // --resolve-budgets: print these budget values as bytes for a module of
  // --memory-before bytes, as the pass would resolve them.
  std::string resolve_budgets;
  int64_t memory_before = 0;

  std::string input;
  std::string output;        // -o: the module after the pass
  std::string report;        // --report: the JSON report (else stdout)
  std::string dump_dir;      // --dump-dir: DOT graphs and memory logs
  std::string export_graph;  // --export-graph: the planner's graph (JSON)
  std::string frontier;      // --frontier: the frontier search's points (JSON)
  std::string size_function = "plain";
  bool check_numerics = false;
  // Compare against this module instead of the input (tests the checker).
  std::string numerics_reference;
  // Run as the GPU hook does, on a module copy insertion has already seen.
  bool after_copy_insertion = false;
  bool judge_whole_copies = false;  // --judge-whole-copies
  bool check_peak_bound = false;    // --check-peak-bound
  int time_runs = 0;                // --time N; 0: not timed
  int explain_peak_top = 0;         // --explain-peak N; 0: not printed
  int planning_threads = 0;         // --planning-threads N; 0: one per core
  bool fail_if_missed = false;      // exit 3 when the budget is not met (CI)
  std::vector<std::string> remat_flags;  // --xla_rematerialization_*=...
  Platform platform = Platform::kCpu;
  GpuCliArgs gpu;
};

// InvalidArgument with a one-line message naming the option and the fix.
absl::StatusOr<CliArgs> ParseCliArgs(absl::Span<char* const> argv);

// --help: a usage line, then one line per option with its default, then the
// rematerialization flags (also read from XLA_FLAGS).
std::string CliHelp();

}  // namespace hlo_remat

#endif  // HLO_REMAT_CLI_ARGS_H_
