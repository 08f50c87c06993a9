// Options of the rematerialization pass. The flags that set them, with their
// parser, are declared once in remat_flag_table.h.
#ifndef XLA_SERVICE_REMAT_REMAT_OPTIONS_H_
#define XLA_SERVICE_REMAT_REMAT_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace xla {
namespace remat {

enum class RematAlgorithm {
  kStandard,
  kCompress,
  kStandardCompress,
  kPath,
  // The least recomputation that meets the budget, solved as a MILP on the
  // schedule (optimal_plan.h); `path`'s plan where that is better or the
  // solver has none in time.
  kOptimal,
  kXla
};
// kDefault: the best of list, DFS and postorder (CPU hook, CLI); on the GPU
// hook it means kGiven. kGiven keeps the incoming schedule and inserts
// recomputations into it.
enum class RematScheduler { kDefault, kGiven, kPostorder, kDfs, kList };

// What the judge copies of a planned module to take its figure
// (judging_copy.h).
enum class JudgingCopyKind {
  // Each fusion calls a stand-in for its fused computation.
  kStandInBodies,
  // Every computation (HloModule::Clone): slower, to check the stand-ins.
  kWhole,
};

inline constexpr double kDefaultMaxExtraFlops = 0.25;
// `optimal`'s solver time: a small step solves in seconds; past it the pass
// keeps `path`'s plan, so a compile never waits longer.
inline constexpr double kDefaultOptimalSeconds = 60;
// The frontier search's threads when RematOptions::planning_threads is 0:
// each holds a copy of the module, and a module has about ten aims.
inline constexpr int kMaxPlanningThreads = 8;

// What memory is planned, judged and reported by (memory_figure.h says why):
// HeapSimulator's peak (CPU) or BufferAssigner's total (GPU), whose
// allocations are `alignment`-aligned.
enum class MemoryFigure { kHeapSimulator, kBufferAssignment };
// "heap_simulator" or "buffer_assignment", as reports name it.
absl::string_view MemoryFigureName(MemoryFigure figure);
struct MemoryFigureOptions {
  MemoryFigure figure = MemoryFigure::kHeapSimulator;
  int64_t alignment = 1;
};

struct RematOptions {
  bool enabled = false;
  // 0 means "reduce as far as the algorithm can".
  int64_t memory_limit_bytes = 0;
  // A budget given as a share of the module's memory before the pass
  // ("0.5x"); when > 0 the pass sets memory_limit_bytes from it.
  double memory_limit_fraction = 0;
  RematScheduler scheduler = RematScheduler::kDefault;
  RematAlgorithm algorithm = RematAlgorithm::kStandard;
  // Values of this many MiB or less are never candidates; 0 disables.
  double small_node_limit_mib = 0;
  // Extra FLOPs a plan may spend, as a fraction of the module's; negative:
  // no cap. The default stops plans that buy a little memory with several
  // times the step's compute, and leaves alone plans that spend a few tenths
  // of it (docs/measured.md has the figures behind it).
  double max_extra_flops_fraction = kDefaultMaxExtraFlops;
  // Seconds `optimal` gives its solver.
  double optimal_seconds = kDefaultOptimalSeconds;
  bool disable_cuda_fusions = false;
  bool dump_dot = false;
  bool dump_memlog = false;
  // Where dumps go (--xla_dump_to in-tree, --dump-dir in the CLI).
  std::string dump_dir;
  // Not a flag (hlo-remat --export-graph): where to write the entry as the
  // planner sees it (remat_graph.h), before planning; "" writes nothing.
  std::string export_graph_path;
  // Not a flag (hlo-remat --planning-threads): planners the frontier search
  // plans its aims with at once, each on a copy of the module, one of them
  // on the pass's thread; 0: one per core, at most kMaxPlanningThreads. The
  // plan does not depend on it.
  int planning_threads = 0;
  // Not a flag (hlo-remat --judge-whole-copies): what the judge copies.
  JudgingCopyKind judging_copy = JudgingCopyKind::kStandInBodies;
  // Not a flag (hlo-remat --check-peak-bound): PlannerConfig's
  // check_peak_bound.
  bool check_peak_bound = false;
  // Not a flag (hlo-remat --frontier): where to write the frontier search's
  // points (plan_frontier.h) as JSON; "" writes nothing.
  std::string frontier_path;
  // Where each module's frontier is kept between compiles
  // (frontier_cache.h); "" keeps none.
  std::string frontier_cache_dir;
  // Not a flag: the engine's build, which a kept frontier must be of
  // (in-tree the patch's sources, hlo-remat its build fingerprint).
  std::string engine_revision;
  // Not a flag: set where the pass runs after copy insertion chose its copies
  // for the incoming order (the GPU hook). After the pass, no two values that
  // share a buffer may be live at once, or the pass fails.
  bool check_live_ranges = false;
  // Not a flag: set where the platform allocates by buffer assignment (the
  // GPU hook, hlo-remat --platform gpu).
  MemoryFigureOptions memory_figure;

  int64_t small_node_limit_bytes() const {
    return static_cast<int64_t>(small_node_limit_mib * 1024.0 * 1024.0);
  }
};

// The budget in bytes: a share of `memory_before` (at least one byte) when
// the options name one, else memory_limit_bytes.
int64_t ResolvedBudgetBytes(const RematOptions& options, int64_t memory_before);

// Each algorithm's and scheduler's name, as the flags spell it.
absl::string_view AlgorithmName(RematAlgorithm algorithm);
absl::string_view SchedulerName(RematScheduler scheduler);
std::vector<absl::string_view> AlgorithmNames();
std::vector<absl::string_view> SchedulerNames();

// The algorithm or scheduler `name` spells (schedulers in any case: "DFS" is
// the documented spelling, "dfs" is accepted), or nullopt.
std::optional<RematAlgorithm> AlgorithmNamed(absl::string_view name);
std::optional<RematScheduler> SchedulerNamed(absl::string_view name);

// The options as the GPU hook runs them. There the pass follows copy
// insertion and the latency-hiding scheduler, both of which chose for the
// incoming order: an unset (or "default") scheduler means kGiven, and a named
// one is checked for live-range interference after the pass.
RematOptions OptionsAfterCopyInsertion(RematOptions options);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_OPTIONS_H_
