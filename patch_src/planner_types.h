// The planner's vocabulary: what a caller configures (PlannerConfig, with the
// frontier search and `optimal`), what a plan's judge says (PlanVerdict) and
// what the planner reports (PlannerResult). Apart from the planner itself
// (remat_planner.h) so that its parts, which read the config and write the
// result, need not include the planner.
#ifndef XLA_SERVICE_REMAT_PLANNER_TYPES_H_
#define XLA_SERVICE_REMAT_PLANNER_TYPES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/optimal_result.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/remat_decision.h"
#include "xla/service/remat/remat_options.h"

namespace xla {
namespace remat {

// The simulator's verdict on a finished plan.
struct PlanVerdict {
  bool keep = true;
  int64_t simulated_peak = 0;
  std::string rejection;  // why not kept, for the report; empty when kept
};

// `optimal`: the MILP of optimal_model.h beside `path`'s plan.
struct OptimalConfig {
  // Longest chain of producers one recomputation may rebuild.
  int depth = 2;
  // For all the solves of one plan; past it `path`'s plan stands.
  double time_limit_seconds = 60;
  double relative_gap = 1e-4;
  // Models with more columns are not solved: the time limit does not bound
  // the root of the solver's search, whose time grows about as the cube of
  // the columns (docs/measured.md).
  int max_columns = 40000;
};

class BackgroundFrees;  // background_frees.h

// The frontier search (plan_frontier.h): the plan search once per aim, each
// plan judged by keep_plan, all on one planner; `choose` picks the point
// kept (nullopt: none, the computation stays as given), whose search is
// made again and applied. PlannerConfig::target_bytes is then only the
// budget `choose` answers; no search aims at it.
struct KnownFrontier;  // plan_recipe.h

struct FrontierSearch {
  std::vector<int64_t> aims;
  std::function<std::optional<int>(absl::Span<const FrontierPoint>)> choose;
  // The platform's figure of the computation as given: the peak of the plan
  // of no moves, whose aim is the tracker's start. 0: the tracker's start.
  int64_t start_peak_bytes = 0;
  // Planners that make the aims' plans at once, each on a copy of the
  // module (frontier_points.cc, FrontierPoints); 1: the one planner makes
  // them, on the module itself. The points and the sweeps made do not depend
  // on it, nor do the judgements above 1 (with 1 too where the module lists
  // its instructions as its copies do, as a parsed module does).
  int lanes = 1;
  // Where two neighbouring plans of the frontier (NonDominated) differ in
  // extra FLOPs by more than this, a plan between them is made: one sweep
  // at the lower plan's level under a compute cap between their moves'
  // FLOPs (frontier_points.cc, FillWideSteps). The aims alone leave such steps
  // (the decoder for h100_sxm: 0.579 of its figure at +8.0%, then 0.499 at
  // +13.4%), and a budget between pays for the lower plan. 0: none.
  double wide_step_flops = 0;
  // At most this many such plans, the widest steps first (pass time).
  int max_step_fills = 0;
  bool FillsSteps() const { return wide_step_flops > 0 && max_step_fills > 0; }
  // The points an earlier compile of the module made (frontier_cache.h):
  // the search makes only the chosen point's plan, and searches the whole
  // frontier when that plan does not land on its point. Null: none.
  std::shared_ptr<const KnownFrontier> known;
  // Where the lanes' copies are freed, each in a thread of its own once its
  // aims are planned, joined when `frees` is destroyed: the pass's driver
  // keeps it to its end. Null: joined before the search returns.
  BackgroundFrees* frees = nullptr;
  // Called once the search's own points are made, with the module as given
  // (no plan in it) and those points: the frontiers of other schedules of
  // the module, one per schedule searched (none: it searched none). Their
  // points join the search's for the lookup (FrontierPoint::schedule). Null:
  // the module's schedule only. Not with a known frontier.
  std::function<
      absl::StatusOr<std::vector<std::shared_ptr<const KnownFrontier>>>(
          const HloModule&, absl::Span<const FrontierPoint>)>
      other_schedules;
};

// The default PlannerConfig::out_of_line_factor.
inline constexpr double kOutOfLineFactor = 8;

struct PlannerConfig {
  // Live bytes to reach at every position; 0 means as low as possible.
  int64_t target_bytes = 0;
  // A lower bound on the peak (memory_floor.h), or 0: aims below it are
  // not tried when the budget is missed.
  int64_t floor_bytes = 0;
  // Values of this many bytes or fewer are never candidates.
  int64_t min_candidate_bytes = 0;
  // A recomputed value may itself be recomputed this many times.
  int max_generations = 3;
  bool recompute = true;
  bool compress = false;
  // `path`: chains of recomputation, then undo.
  bool chains = false;
  // `path`: a clone of a multi-output producer also serves the other
  // elements read late (Candidate::siblings), in its sweeps without chains
  // too.
  bool siblings = false;
  // Instructions in one chain, the value included: the members of its tree,
  // every branch counted.
  int max_chain_length = 8;
  // Where that cut a chain short and what was left freed nothing (a link
  // past it held across instead), the chain is sought again with this many.
  // Attention's probabilities rebuilt from the layer's input (read late
  // anyway, by the weight gradients) take 12 on XLA:CPU: softmax's five ops
  // and the scores' GEMM, and per side the projection's GEMM, its bias add
  // and a layout copy; 16 leaves each side room for more (a rotary
  // embedding, a scale). Longer chains everywhere made VGG16's lowest plan
  // for h100_sxm higher and dearer (docs/measured.md).
  int max_chain_length_when_cut = 16;
  // FLOPs the kept moves may add in all (cost_model.h's RecomputeFlops);
  // negative: no cap. A move that would pass it is not made.
  double max_extra_flops = -1;
  // The rule on FLOPs per byte: no recomputation in the plan kept may spend
  // more than this many times the plan's own FLOPs per byte of peak saved
  // (the plan's extra FLOPs over the bytes it takes off the tracker's peak),
  // a move's price being its FLOPs over what the peak rises by without it.
  // Not where the plan meets the budget by keep_plan's figure: the budget
  // comes first, and max_extra_flops bounds what it spends. 0: no rule.
  double out_of_line_factor = kOutOfLineFactor;
  // How the entry's outputs aliased with donated parameters are counted
  // (memory_tracker.h): as the platform's figure counts them.
  AliasedOutputs aliased_outputs = AliasedOutputs::kOwnBytes;
  // Where a clone may still read a donated parameter (input_output_alias):
  // true, right before the first instruction that writes an output aliased
  // with it, as before an in-place writer; false, one position earlier. On
  // GPU the later place lets a weight's layout copy be made again right
  // before its fused update instead of held from the forward pass. On CPU
  // the greedy plans it opens ended higher by HeapSimulator, so the CPU
  // keeps the earlier place (docs/measured.md).
  bool read_donated_until_written = false;
  // Every move the peak bound (move_peak_bound.h) refuses is applied
  // anyway, and the plan fails with an internal error if it raised no peak:
  // the bound's soundness checked on real modules (tests, hlo-remat
  // --check-peak-bound). Off, a refused move is never built.
  bool check_peak_bound = false;
  // The planned computation's memory model on its current schedule, when
  // the caller has it (built otherwise).
  std::shared_ptr<const ComputationMemory> entry_memory;
  // Set for `optimal`: after `path` plans, the MILP's plan is made and the
  // one the judge finds better kept (optimal_plan.h).
  std::optional<OptimalConfig> optimal;
  // Judges the finished plan on a copy of the module with it applied,
  // before the module is touched; `keep` false takes every move back, so
  // that the computation comes back as it was given. Unset: every plan is
  // kept, and no move is taken back but `path`'s chains. The copy's fusions
  // call stand-in bodies (judging_copy.h): its figure must be taken with
  // the `alias_info` given, which answers for them.
  std::function<absl::StatusOr<PlanVerdict>(const HloModule& planned,
                                            const AliasInfo* alias_info)>
      keep_plan;
  // The target's AliasInfo, which the judge's copy answers as for all but
  // its stand-in bodies; null: XLA's default.
  const AliasInfo* alias_info = nullptr;
  // What the judge's copy holds (the figure is the same either way).
  JudgingCopyKind judging_copy = JudgingCopyKind::kStandInBodies;
  // Set where the plan applied must keep what keep_plan does not check of
  // every point for its cost: after copy insertion, the buffer sharing
  // (live_range_check.h). False: the chosen point is refused and the next
  // chosen.
  std::function<absl::StatusOr<bool>(const HloModule& planned)> applicable;
  // Set (with keep_plan): the plan is chosen from the frontier of these
  // aims instead of searched for at target_bytes. With `optimal`, the
  // chosen plan is then compared with the MILP's at target_bytes.
  std::optional<FrontierSearch> frontier;
};

// Where the frontier a budget was answered from came from.
enum class FrontierSource {
  kSearched,  // every aim planned by this search
  kKnown,     // FrontierSearch::known; its chosen plan landed on its point
  // FrontierSearch::known, whose chosen plan did not land on its point:
  // every aim planned again by this search.
  kKnownStale,
};

struct PlannerResult {
  int recomputed = 0;  // clones in the result
  int compressed = 0;  // values kept compact in the result
  int undone = 0;      // moves taken back: the peak held without them
  // Of those, the ones the rule on FLOPs per byte took back.
  int out_of_line = 0;
  int compressible = 0;  // values that have a smaller compact form
  int articulation_points = 0;
  int instructions_added = 0;    // clones, copies and the bitcasts they need
  int instructions_removed = 0;  // producers left with no use
  bool plan_rejected = false;    // keep_plan said no: nothing applied
  std::string rejection;         // keep_plan's reason, when it said no
  // The plan kept left a move out, at a position where it has its peak,
  // because the move would have passed max_extra_flops.
  bool flops_capped = false;
  // Of the moves kept, less the runs the plan left without a reader.
  double extra_flops = 0;
  int pinned = 0;  // control edges keeping clones after their trigger point
  int64_t initial_peak_bytes = 0;  // tracker, before the plan
  int64_t planned_peak_bytes = 0;  // tracker, after the plan
  int plans_tried = 0;             // sweeps of the schedule
  // Of plans_tried, sweeps made again by applying the moves the same sweep
  // kept before (sweep_replay.h).
  int sweeps_replayed = 0;
  // Sweeps made again in full, not in plans_tried: another sweep continued
  // from a replayed one's plan.
  int sweeps_rescored = 0;
  double judge_seconds = 0;  // in keep_plan
  int judgements = 0;        // calls of keep_plan
  OptimalResult optimal;
  // The frontier search's points, in the order of its aims, and the one
  // chosen (nullopt: none); empty without PlannerConfig::frontier.
  std::vector<FrontierPoint> frontier;
  std::optional<int> frontier_chosen;
  FrontierSource frontier_source = FrontierSource::kSearched;
  // The frontier this search made, with its recipes, for a later compile
  // (frontier_cache.h); null when it was known already, or spans schedules.
  std::shared_ptr<const KnownFrontier> frontier_made;
  // The chosen point lies on another schedule (FrontierPoint::schedule):
  // nothing is applied, and this holds that point with its recipe, for the
  // caller to make on that schedule. Null: the chosen plan is applied.
  std::shared_ptr<const KnownFrontier> frontier_chosen_elsewhere;
  // The platform's figure of the chosen plan as applied: its point's peak
  // when the search made it again the same way.
  int64_t frontier_applied_peak = 0;
  // The chosen plan's recipe (plan_recipe.h) did not make it again, and a
  // whole search did: a bug to report.
  bool frontier_replay_missed = false;
  std::vector<RematDecision> decisions;

  // Adds the moves of a plan of another computation: its counts and its
  // decisions after these. Facts of this plan (peaks, compressible values,
  // articulation points, rejection) stay.
  void AddMovesOf(PlannerResult other);
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLANNER_TYPES_H_
