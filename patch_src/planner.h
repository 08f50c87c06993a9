// One planner of a computation: the sweep over the schedule that picks
// and applies the best move while a position is over the target, the undo
// of chains for `path`, the take-backs, and the plan in hand made again
// from its recipe. The searches that drive it are in plan_search.h and
// frontier_points.h.
//
// The state it drives is in planner_values.h, the memory model in
// planner_liveness.h, scoring in planner_scoring.h and the HLO edits in
// planner_edits.h.
#ifndef XLA_SERVICE_REMAT_PLANNER_H_
#define XLA_SERVICE_REMAT_PLANNER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/remat/judging_copy.h"
#include "xla/service/remat/milp_solver.h"
#include "xla/service/remat/optimal_plan.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/plan_signature.h"
#include "xla/service/remat/planner_edits.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/ranked_shortlist.h"
#include "xla/service/remat/score_dependencies.h"
#include "xla/service/remat/size_function.h"
#include "xla/service/remat/sweep_replay.h"
#include "xla/service/remat/verdict_store.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

// A recomputation and its FLOPs per byte of peak saved.
struct PricedMove {
  int move_index;
  double flops_per_byte;
};

// A finished plan, as the driver compares them.
struct PlanOutcome {
  int64_t target = 0;
  int64_t peak = 0;
  double cost = 0;   // of the moves kept
  double flops = 0;  // of the moves kept, less the runs left unread
  // The moves' own FLOPs, which the compute cap is checked against.
  double move_flops = 0;
  // Lower peak; at the same peak, less recomputation.
  bool BetterThan(const PlanOutcome& other) const {
    return peak != other.peak ? peak < other.peak : cost < other.cost;
  }
};

// A plan as a sweep from no moves left it: made again the same way, it is
// the same plan (the tracker's peak and the FLOPs check it).
struct FreshPlan {
  PlanKey sweep;
  int64_t tracker_peak;
  double flops;
  template <typename H>
  friend H AbslHashValue(H state, const FreshPlan& plan) {
    return H::combine(std::move(state), plan.sweep, plan.tracker_peak,
                      plan.flops);
  }
  bool operator==(const FreshPlan& other) const {
    return sweep == other.sweep && tracker_peak == other.tracker_peak &&
           flops == other.flops;
  }
};

class Planner {
 public:
  Planner(HloModule* module, HloComputation* computation,
          const PlannerConfig& config, const SizeFunction& size_fn,
          const HloCostAnalysis& costs)
      : state_(module, computation, config, size_fn, costs),
        configured_max_extra_flops_(config.max_extra_flops) {}

  absl::Status Init() { return state_.Init(); }
  // One plan at `target`: the sweep, then for `path` the undo. Returns the
  // planned peak; counted in plans_tried.
  absl::StatusOr<int64_t> Plan(int64_t target);
  // Takes back every move, newest first: the module is as Init found it.
  absl::Status RevertAll();
  // How the plan in hand was made (plan_recipe.h), with what it came to.
  PlanRecipe Recipe() const {
    PlanRecipe recipe = recipe_;
    recipe.chains = state_.config().chains;
    recipe.cap = state_.config().max_extra_flops;
    recipe.tracker_peak = tracker_peak();
    recipe.extra_flops = kept_flops();
    return recipe;
  }
  // Makes `recipe`'s plan again from no moves, as StartSearch(`config`)
  // leaves the planner. False (nothing in hand): the replay did not come to
  // the plan the recipe recorded, or cannot be made.
  absl::StatusOr<bool> Replay(const PlanRecipe& recipe,
                              const PlannerConfig& config);
  // Whether a sweep from no moves made before is made again by applying
  // the moves it kept (sweep_replay.h); on by default. Off, every sweep
  // scores: the plans are the same, their clones' names may differ.
  void set_replay_sweeps(bool replay) { replay_sweeps_ = replay; }
  int64_t initial_peak() const { return state_.result().initial_peak_bytes; }
  double kept_cost() const { return state_.moves().KeptCost(); }
  bool has_moves() const { return state_.moves().HasKept(); }
  // Chains on or off for the plans made from now on (`path` or `standard`);
  // the scores cached for the other kind are stale.
  void set_chains(bool chains) {
    state_.set_chains(chains);
    MarkAllScoresStale(state_);
  }
  // The compute cap for the plans made from now on. (The cap is checked as
  // moves are applied; no cached score depends on it.)
  void set_max_extra_flops(double flops) { state_.set_max_extra_flops(flops); }
  double max_extra_flops() const { return state_.config().max_extra_flops; }
  // The judge's verdicts of fresh plans, for every search on this planner:
  // a search comes back to its best plan after trying others, searches at
  // different aims make some of the same plans, and a judgement costs a
  // simulation of the whole module.
  absl::flat_hash_map<FreshPlan, PlanVerdict>& fresh_verdicts() {
    return fresh_verdicts_;
  }
  // What each sweep from no moves came to: planning is deterministic, and
  // the searches' ladders and descents come back to aims made before.
  absl::flat_hash_map<PlanKey, PlanOutcome>& known_outcomes() {
    return known_outcomes_;
  }
  void add_judge_seconds(double seconds) {
    ++state_.result().judgements;
    state_.result().judge_seconds += seconds;
  }
  // The sweeps and judgements a planner made, and the judge's seconds.
  struct Counts {
    int plans_tried = 0;
    int judgements = 0;
    double judge_seconds = 0;
    int sweeps_replayed = 0;
    int sweeps_rescored = 0;
  };
  Counts counts() const {
    const PlannerResult& result = state_.result();
    return {result.plans_tried, result.judgements, result.judge_seconds,
            result.sweeps_replayed, result.sweeps_rescored};
  }
  // The sweeps and judgements another planner made (a lane of the frontier
  // search); its judge's seconds are the caller's to share out.
  void AddCounts(const Counts& other) {
    PlannerResult& result = state_.result();
    result.plans_tried += other.plans_tried;
    result.judgements += other.judgements;
    result.sweeps_replayed += other.sweeps_replayed;
    result.sweeps_rescored += other.sweeps_rescored;
  }
  double judge_seconds() const { return state_.result().judge_seconds; }
  void set_judge_seconds(double seconds) {
    state_.result().judge_seconds = seconds;
  }
  // Every search starts from what it makes itself: the plan an aim gets
  // does not depend on which aims this planner searched before, so aims
  // searched on several planners at once get the plans one planner would.
  // (Aims share few plans: on DenseNet-121 one cache for all made 103 plans
  // where a cache per aim made 109.)
  void ForgetSearches() {
    fresh_verdicts_.clear();
    known_outcomes_.clear();
  }
  bool rejected() const { return state_.result().plan_rejected; }
  // The configured compute cap left a move out where the plan in hand has
  // its peak (Materialize reports it as flops_capped).
  bool capped_at_peak() const {
    return state_.config().max_extra_flops == configured_max_extra_flops_ &&
           CapHoldsThePeak();
  }
  // Back to no move, and to the chains, compute cap and verdicts `config`
  // sets: a search after another starts where the first one started.
  absl::Status StartSearch(const PlannerConfig& config) {
    TF_RETURN_IF_ERROR(RevertAll());
    set_chains(config.chains);
    set_max_extra_flops(configured_max_extra_flops_);
    PlannerResult& result = state_.result();
    result.plan_rejected = false;
    result.rejection.clear();
    return absl::OkStatus();
  }
  void set_rejected(std::string why) {
    PlannerResult& result = state_.result();
    result.plan_rejected = true;
    result.rejection = std::move(why);
    result.planned_peak_bytes = result.initial_peak_bytes;
  }
  absl::StatusOr<PlannerResult> Materialize() {
    // A cap the search lowered for a plan that met the budget did not stop
    // it; the configured one did if it left a move out at the peak.
    state_.result().flops_capped =
        state_.config().max_extra_flops == configured_max_extra_flops_ &&
        CapHoldsThePeak();
    return remat::Materialize(state_);
  }
  absl::StatusOr<std::unique_ptr<HloModule>> PlannedCopy() {
    return remat::PlannedCopy(state_);
  }
  // The plan in hand as the judge sees it (plan_signature.h), and its copy.
  FinalOrder FinalOrderInHand() const { return ComputeFinalOrder(state_); }
  std::string Signature(const FinalOrder& order) const {
    return PlanSignature(state_, order);
  }
  absl::StatusOr<JudgingCopy> JudgingCopyOf(const FinalOrder& order) {
    return remat::JudgingCopyOf(state_, order);
  }
  // The judge's verdict of every plan judged on this planner, by signature,
  // or on any planner sharing its store. Kept across searches: a verdict is
  // of the plan alone, so reading it here instead of judging again changes
  // no search.
  VerdictStore& verdicts() { return *verdicts_; }
  // Judges through `other`'s store from now on (a lane of the frontier
  // search, whose verdicts the raises and the chosen plan made again come
  // back to): a signature names slots of the schedule both planners started
  // from and the order of the computation's instructions, so it means one
  // plan on either (where the two modules list their instructions
  // differently, it matches nothing). `other` must outlive this planner.
  void ShareVerdictsOf(Planner& other) { verdicts_ = other.verdicts_; }
  // Learns the fused computations' facts for the judge's copies through
  // `store` from now on (the frontier search's lanes share one).
  void UseFusedBodyFacts(std::shared_ptr<FusedBodyFactsStore> store) {
    state_.judging_copier().UseStore(std::move(store));
  }
  // Whether the plan in hand may be applied (PlannerConfig::applicable;
  // unset: always).
  absl::StatusOr<bool> Applicable(
      const std::function<absl::StatusOr<bool>(const HloModule&)>& check) {
    if (check == nullptr || !has_moves()) return true;
    TF_RETURN_IF_ERROR(DropTakenBack());
    TF_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> planned, PlannedCopy());
    return check(*planned);
  }
  absl::Status DropTakenBack() { return remat::DropTakenBack(state_); }
  // As the written module runs them: runs left without a reader go. Kept
  // for the plan in hand: a search asks again of the same plan, and
  // finding what it leaves unread walks every value the planner made.
  double kept_flops() const {
    if (kept_flops_revision_ != plan_revision()) {
      kept_flops_ = PlanExtraFlops(state_);
      kept_flops_revision_ = plan_revision();
    }
    return kept_flops_;
  }
  // As the compute cap counts them: each move's own FLOPs.
  double move_flops() const { return state_.moves().KeptFlops(); }
  // Equal for the same plan in hand (move_log.h).
  int64_t plan_revision() const { return state_.moves().revision(); }
  int64_t tracker_peak() const { return state_.liveness().Max(); }
  // The copies of each value the plan in hand keeps, and the MILP of the
  // schedule (no move in hand).
  CopiesInHand PlanInHand() const { return CopiesOfPlanInHand(state_); }
  absl::StatusOr<std::unique_ptr<OptimalProblem>> BuildOptimalProblem(
      int depth) const {
    return OptimalProblem::Build(state_, depth);
  }
  absl::StatusOr<OptimalSolve> SolveOptimal(
      const OptimalProblem& problem, int64_t target, double seconds,
      absl::Span<const double> start) const {
    MilpSolveOptions options;
    options.time_limit_seconds = seconds;
    options.relative_gap = state_.config().optimal->relative_gap;
    return problem.Solve(target, state_.config().max_extra_flops, options,
                         start);
  }
  // Applies the MILP's plan (no move in hand); returns the planned peak.
  absl::StatusOr<int64_t> ApplyOptimal(const OptimalProblem& problem,
                                       const OptimalSolve& solve) {
    PlannerResult& result = state_.result();
    ++result.plans_tried;
    recipe_.replayable = false;
    TF_RETURN_IF_ERROR(problem.Apply(state_, solve));
    result.planned_peak_bytes = state_.liveness().Max();
    return result.planned_peak_bytes;
  }
  void set_optimal(OptimalResult optimal) {
    state_.result().optimal = std::move(optimal);
  }
  // Takes back, costliest per byte saved first, each move the plan's peak
  // (or the target, if higher) holds without. Returns how many.
  absl::StatusOr<int> TakeBackUnneeded(int64_t target, bool recompute_only) {
    recipe_.steps.push_back({PlanStepKind::kTakeBackUnneeded, target,
                             /*chains=*/true, /*cap=*/-1, recompute_only});
    return TakeBackUnneededMoves(target, recompute_only);
  }
  // The rule on FLOPs per byte (PlannerConfig::out_of_line_factor): the
  // recomputations whose FLOPs per byte of peak saved pass the factor times
  // the plan's own, dearest first.
  std::vector<PricedMove> OutOfLineMoves();
  // Takes back `dear` (OutOfLineMoves), each priced again at its turn.
  // Returns how many.
  absl::StatusOr<int> TakeBackOutOfLine(absl::Span<const PricedMove> dear) {
    recipe_.steps.push_back({PlanStepKind::kTakeBackOutOfLine});
    return TakeBackOutOfLineMoves(dear);
  }

 private:
  absl::Status Sweep(int64_t target);
  // The sweep of a Plan from no moves: `offered_sweep_` or a record of the
  // same sweep replayed, else swept and recorded.
  absl::Status SweepFromNoMoves(int64_t target);
  // The record of `sweep`, or null.
  std::shared_ptr<const SweepRecord> RecordOf(const PlanKey& sweep) const;
  // The sweep from no moves at `target` with the chains and cap in force.
  PlanKey SweepAt(int64_t target) const {
    const PlannerConfig& config = state_.config();
    return PlanKey{target, config.chains, config.max_extra_flops};
  }
  // Takes back every move but keeps the recipe: a replay that missed.
  absl::Status RevertAllKeepingRecipe() {
    PlanRecipe recipe = std::move(recipe_);
    TF_RETURN_IF_ERROR(RevertAll());
    recipe_ = std::move(recipe);
    return absl::OkStatus();
  }
  // The plan in hand made again by its recipe's steps with every sweep
  // scored: a sweep continues from it, and a replayed sweep leaves neither
  // scores nor the values a sweep activates as the sweep left them.
  absl::Status SweepAgain();
  // A recipe's steps, taken as the search took them.
  absl::Status TakeSteps(absl::Span<const PlanStep> steps);
  absl::StatusOr<int> TakeBackUnneededMoves(int64_t target,
                                            bool recompute_only);
  // `dear` must be OutOfLineMoves() of the plan in hand: the recipe
  // records the step, not the list.
  absl::StatusOr<int> TakeBackOutOfLineMoves(absl::Span<const PricedMove> dear);
  // Lowers the memory at `slot` towards `target` with the best moves there,
  // trying at most `allowed`; returns how many it tried (those taken back at
  // once, or refused by the peak bound unbuilt, included). `kept_flops`, the
  // kept moves' own FLOPs, grows by those it keeps.
  absl::StatusOr<int> LowerSlot(int slot, int64_t target, int allowed,
                                double& kept_flops);
  // The best move of `value` raises the peak in the plan's present state:
  // refused for the rest of the slot, and until the state changes.
  void Refuse(int value, absl::flat_hash_set<int>& rejected);
  // The values at one slot that have candidates and were not refused, in the
  // order the scan meets them, while no move has been kept since they were
  // listed (the plan's stamp has not moved: those refused since are in
  // LowerSlot's `rejected`).
  struct Shortlist {
    std::vector<int> values;
    bool current = false;
    // Their candidates ranked (ranked_shortlist.h) at the first refusal
    // since they were listed.
    RankedShortlist ranked;
    bool heaped = false;
  };
  // The best candidate at `slot`, not of a value in `rejected` nor refused
  // in the plan's state; null if none. Scans every active value, unless
  // `shortlist` is current: then only those it lists (a refusal changes no
  // score). Lists them when it scans.
  const Candidate* BestCandidate(int slot,
                                 const absl::flat_hash_set<int>& rejected,
                                 Shortlist& shortlist);
  // Part of Plan (the recipe's kPlan step).
  absl::Status UndoChains(int64_t target) {
    return TakeBackUnneededMoves(target, /*recompute_only=*/true).status();
  }
  bool Undoable(int move_index) const;
  // Whether the compute cap left out a move at a position where the plan in
  // hand has its peak: there the cap, not the budget, stopped it. (A move
  // left out where the memory fell below the peak later would not have
  // lowered the peak: a looser cap ends at the same peak there.)
  bool CapHoldsThePeak() const {
    const int64_t peak = state_.liveness().Max();
    for (int slot : capped_slots_) {
      if (state_.liveness().At(slot) >= peak) return true;
    }
    return false;
  }
  // Takes back move `move_index` and reports it.
  absl::Status TakeBack(int move_index);
  // FLOPs per byte the peak rises by without move `move_index`; negative
  // when it does not rise (the move is unneeded, not dear).
  double FlopsPerPeakByte(int move_index);
  // The plan's extra FLOPs per byte it took off the peak (infinite when it
  // took nothing off).
  double PlanPrice() const;

  PlannerState state_;
  const double configured_max_extra_flops_;
  // The steps since the last RevertAll.
  PlanRecipe recipe_;
  absl::flat_hash_map<FreshPlan, PlanVerdict> fresh_verdicts_;
  absl::flat_hash_map<PlanKey, PlanOutcome> known_outcomes_;
  VerdictStore own_verdicts_;
  VerdictStore* verdicts_ = &own_verdicts_;
  // kept_flops() of the plan revision `kept_flops_revision_`.
  mutable double kept_flops_ = 0;
  mutable int64_t kept_flops_revision_ = -1;
  // Where the compute cap left a move out, since the plan in hand started.
  absl::flat_hash_set<int> capped_slots_;
  // The sweeps from no moves made on this planner, by what they were.
  // Kept across searches: a replay is checked to come to the same plan.
  absl::flat_hash_map<PlanKey, std::shared_ptr<const SweepRecord>>
      sweep_records_;
  // The moves the sweep in progress keeps, when it is recorded.
  SweepRecord* recording_ = nullptr;
  // A record Replay offers for its recipe's first sweep (made on another
  // planner of the same module, perhaps).
  std::shared_ptr<const SweepRecord> offered_sweep_;
  bool replay_sweeps_ = true;
  // The plan in hand was made by a replayed sweep (SweepAgain).
  bool replayed_in_hand_ = false;
  // Changes with every move a sweep keeps, and between sweeps: a move
  // refused in one stamp is refused in it again (ScoreCache::refused_in),
  // so it is not applied and taken back again at the next slot: on a deep
  // graph most moves tried raise the peak, and trying them once each keeps
  // the same plans for less time (figures: docs/measured.md).
  int64_t plan_stamp_ = 0;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLANNER_H_
