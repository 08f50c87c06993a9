// What one run of the pass did, as figures.
#ifndef XLA_SERVICE_REMAT_REMAT_REPORT_H_
#define XLA_SERVICE_REMAT_REMAT_REPORT_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "xla/service/remat/optimal_result.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/remat_decision.h"
#include "xla/service/remat/remat_options.h"

namespace xla {
namespace remat {

// A GPU module's instructions by what produces tuples (they change how
// buffers are shared).
struct GpuInstructionCounts {
  int64_t instructions = 0;
  int64_t fusions = 0;
  int64_t multi_output_fusions = 0;
  int64_t tuple_custom_calls = 0;
};

// The wheel's own compile of the same input, and whether ours is the same HLO.
struct WheelReferenceFigures {
  int64_t heap_sim_bytes = 0;
  int64_t buffer_assignment_bytes = 0;
  GpuInstructionCounts counts;
  bool text_equal = false;
};

// What the GPU pipeline around the pass reports: the figures the pass saw at
// its hook (the report's main figures are the pipeline's final ones), the
// modules without (`baseline`) and with (`final`) the pass, and how the
// pipeline ran.
struct GpuPipelineFigures {
  int64_t heap_sim_at_hook_before_bytes = 0;
  int64_t heap_sim_at_hook_after_bytes = 0;
  int64_t allocation_at_hook_before_bytes = 0;
  int64_t allocation_at_hook_after_bytes = 0;
  GpuInstructionCounts baseline;
  GpuInstructionCounts final;
  int64_t scheduler_mem_limit_bytes = 0;
  std::vector<std::string> disabled_passes;
  std::optional<WheelReferenceFigures> wheel_reference;
  // Which convolution and GEMM kernels the compile chose: empty, XLA's
  // defaults; else the autotune results file recorded on the user's GPU,
  // with how many of the compile's lookups found an entry there.
  std::string autotune_results;
  int64_t autotune_hits = 0;
  int64_t autotune_misses = 0;
  // The target's memory and CUDA compute capability (major; 0 elsewhere), as
  // its spec gives them: what a card of that name offers.
  int64_t device_memory_bytes = 0;
  int compute_capability_major = 0;
};

// Whether the module computes the same after the pass (hlo-remat
// --check-numerics runs both on XLA:CPU).
enum class Numerics { kSkipped, kEqual, kDiffer };
absl::string_view NumericsName(Numerics numerics);

// What the frontier cache (--xla_rematerialization_frontier_cache) did.
enum class FrontierCacheUse {
  kOff,         // no cache folder given, or no frontier searched
  kSearched,    // no frontier kept for the module: searched, and kept
  kUsed,        // the kept frontier answered the budget
  kStale,       // the kept frontier's chosen plan did not land on its point:
                // searched again, and kept in its place
  kUnreadable,  // the file could not be read (the note says why): searched
};
absl::string_view FrontierCacheUseName(FrontierCacheUse use);

struct RematReport {
  std::string module;
  std::string algorithm;
  std::string scheduler;         // as asked
  std::string scheduler_chosen;  // the one kept ("default" tries three)
  int64_t budget_bytes = 0;
  // peak_*: the planner's own tracker (memory_tracker.h), which counts
  // shared buffers apart: what the planner aimed with, not what the platform
  // allocates (allocation_*_bytes below is that).
  int64_t peak_before_bytes = 0;     // on the schedule as given
  int64_t peak_scheduled_bytes = 0;  // after re-scheduling
  int64_t peak_after_bytes = 0;
  // HeapSimulator's peak, on the same three schedules.
  int64_t heap_sim_before_bytes = 0;
  int64_t heap_sim_scheduled_bytes = 0;
  int64_t heap_sim_after_bytes = 0;
  // Lower bound no schedule or recomputation can beat (memory_floor.h),
  // and the instruction that sets it; of the module after the loop-stack
  // rewrite when it removed stacks (it changes the program, not the order).
  int64_t floor_bytes = 0;
  std::string floor_at;
  bool budget_met = false;
  // instructions_before/after count every computation's instructions, a
  // cloned fusion's fused computation included; instructions_added counts
  // the clones the plan put in the schedule (a cloned fusion is one).
  int64_t instructions_before = 0;
  int64_t instructions_after = 0;
  int64_t instructions_added = 0;
  int64_t recomputed = 0;
  int64_t compressed = 0;
  int64_t undone = 0;
  // Of `undone`, the recomputations the rule on FLOPs per byte took back
  // (remat_planner.h, PlannerConfig::out_of_line_factor).
  int64_t out_of_line = 0;
  int64_t pinned = 0;
  // Last readers moved earlier in the schedule (last_reader_hoist.h), and
  // the bytes they free between their new and old places.
  int64_t hoisted = 0;
  int64_t hoisted_bytes = 0;
  // Loop stacks of one invariant value, read instead (invariant_stacks.h).
  int64_t invariant_stacks_removed = 0;
  int64_t invariant_stack_bytes = 0;
  double flops_before = 0;
  double flops_after = 0;
  // The compute cap in FLOPs (negative: none), and whether it left out a
  // move the plan would otherwise have made.
  double max_extra_flops = -1;
  // The figure the budget is judged by (memory_figure.h) and its values
  // before and after the pass: HeapSimulator's peak on CPU, BufferAssigner's
  // total on GPU (where the heap_sim_* fields are the second figure).
  MemoryFigure memory_figure = MemoryFigure::kHeapSimulator;
  // The pass chose a schedule other than the one it was given.
  bool rescheduled = false;
  int64_t allocation_before_bytes = 0;
  int64_t allocation_after_bytes = 0;
  bool stopped_by_flops_cap = false;
  double pass_seconds = 0;
  // Where pass_seconds went, phase by phase in the order run (scheduling,
  // planning, judging plans, ...); the report's own measurements excluded.
  std::vector<std::pair<std::string, double>> phase_seconds;
  int plans_tried = 0;      // sweeps of the schedule the planner made
  int sweeps_replayed = 0;  // of them, made again by applying recorded moves
  int sweeps_rescored = 0;  // made again in full, not in plans_tried
  int judgements = 0;       // plans judged by the platform's figure
  Numerics numerics = Numerics::kSkipped;
  // Median XLA:CPU step time of the module before and after (hlo-remat
  // --time N); NaN, written as null, when not measured.
  double step_time_before_s = std::numeric_limits<double>::quiet_NaN();
  double step_time_after_s = std::numeric_limits<double>::quiet_NaN();
  double step_time_ratio = std::numeric_limits<double>::quiet_NaN();
  std::string note;
  // "cpu", or "gpu" for hlo-remat --platform gpu, which also fills the fields
  // below: buffer-assignment totals of the GPU pipeline without and with the
  // pass, and tuple-shaped fusions left in the final module.
  std::string platform = "cpu";
  std::string gpu_target;
  int64_t buffer_assignment_before_bytes = 0;
  int64_t buffer_assignment_after_bytes = 0;
  int64_t multi_output_fusions = 0;
  // The GPU pipeline's further figures (hlo-remat --platform gpu only).
  std::optional<GpuPipelineFigures> gpu_pipeline;
  // `optimal` only: the solve and the plans it compared.
  std::optional<OptimalResult> optimal;
  // The frontier search's points (plan_frontier.h), in the order of its
  // aims, and the one the budget chose (nullopt: none); empty when the
  // algorithm does not search a frontier.
  std::vector<FrontierPoint> frontier;
  std::optional<int> frontier_chosen;
  // The platform's figure of the schedule the frontier search started from
  // (after re-scheduling, before any plan): the frontier's free point.
  int64_t frontier_start_bytes = 0;
  // The points the lookup may choose (plan_frontier.h, UsablePoints).
  std::vector<int> frontier_usable;
  // The schedules the points were made on (FrontierPoint::schedule): the
  // search's own first, then the others searched (other_schedules.h).
  std::vector<std::string> frontier_schedules;
  // What the frontier cache (frontier_cache.h) did for this compile.
  FrontierCacheUse frontier_cache = FrontierCacheUse::kOff;
  std::vector<RematDecision> decisions;

  // Appends to `note`, "; "-separated.
  void AddNote(absl::string_view text);
  // Adds to the phase's time (a phase run twice is summed).
  void AddPhase(absl::string_view phase, double seconds);
  std::string ToJson() const;
  // The frontier with the figures that place it, as hlo-remat --frontier
  // writes it: module, memory figure, figure before, floor, budget, FLOPs
  // before, and the points, each marked when no other dominates it.
  std::string FrontierJson() const;
};

// Writes report.FrontierJson() to `path`.
absl::Status WriteFrontierJson(const RematReport& report,
                               const std::string& path);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_REPORT_H_
