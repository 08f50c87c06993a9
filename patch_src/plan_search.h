// The search for one budget on one planner (planner.h): the ladder of
// targets when the budget is missed, the descents and aims below it, the
// MILP's plan beside `path`'s for `optimal`, and the judge's take-back of
// unneeded moves.
#ifndef XLA_SERVICE_REMAT_PLAN_SEARCH_H_
#define XLA_SERVICE_REMAT_PLAN_SEARCH_H_

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
#include "xla/service/remat/optimal_plan.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/planner.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/verdict_store.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

// One planner driven to the plan it keeps: the ladder of targets when the
// budget is missed, then the judge and the take-back of unneeded moves.
class PlanSearch {
 public:
  PlanSearch(Planner& planner, const PlannerConfig& config)
      : planner_(planner), config_(config), last_target_(config.target_bytes) {}

  // The lowest plan found, left in hand.
  absl::StatusOr<PlanOutcome> BestPlan();
  // `best` (the plan in hand) misses the budget narrowly by the platform's
  // figure (alignment and fragmentation the tracker does not count, or a
  // greedy step that lands just over): aims lower by what the figure is
  // over, twice at most, and keeps the better plan. Returns the plan left in
  // hand.
  absl::StatusOr<PlanOutcome> AimBelowTheGap(const PlanOutcome& best);
  // `best`, the lowest plan of the ladder, missed the budget: a greedy plan
  // aimed at a budget it cannot reach overshoots, its clones keeping
  // operands alive past the point where it had lowered enough, so a plan
  // aimed above the budget can end lower than one aimed at it
  // (docs/measured.md). Bisects between the
  // budget (or the floor, if higher) and the lowest peak reached: a plan
  // that goes lower moves the top down, one that does not moves the bottom
  // up; not where the ladder (`ladder`, its plans) aimed in between
  // already. The lowest by the tracker challenges the ladder's (Challenge).
  // Returns the plan kept; which plan is in hand is not said.
  absl::StatusOr<PlanOutcome> DescendBelow(
      const PlanOutcome& ladder_best, absl::Span<const PlanOutcome> ladder);
  // `ladder_best` missed the budget by a little by the tracker, the judge
  // says it missed too, and the floor lies well below: the budget may be
  // met by aiming past it: aimed at the budget, the sweep can stall just
  // above it, where an aim below it gets under (docs/measured.md). Bisects
  // the aim
  // between the floor and that peak by the judge's verdict: a plan that
  // meets the budget moves the bottom up (a higher aim recomputes less),
  // one that misses moves the top down; then lowers the compute cap for
  // the cheapest plan that met (below). Returns that plan, or nullopt when
  // none met the budget; which plan is in hand is not said.
  absl::StatusOr<std::optional<PlanOutcome>> AimForTheBudget(
      const PlanOutcome& ladder_best);
  // `challenger` against `incumbent`: not kept unless better by the
  // tracker; as low and cheaper, kept; lower, kept if PlanComparison, on the
  // judge's figures, says so too (without a judge, kept). Only a challenger
  // to be judged is made again when it is not in hand. The tracker's bytes
  // are not the platform's: plans kilobytes apart by the tracker can be
  // megabytes apart by the allocation (docs/measured.md). Which plan is left
  // in hand is not said.
  absl::StatusOr<PlanOutcome> Challenge(const PlanOutcome& challenger,
                                        const PlanOutcome& incumbent);
  // For `optimal`: `best` (`path`'s plan, in hand) beside the MILP's plan,
  // both judged by the platform's figure. The MILP's is kept when it meets
  // the budget for less recomputation, or where both miss it, goes lower;
  // then it is left in hand and returned. Otherwise (also past the time
  // limit, or where the model has no plan) `path`'s stands, and no plan is
  // in hand: the caller makes it again as it made it (solver_plan_kept()
  // says which).
  absl::StatusOr<PlanOutcome> CompareWithOptimum(const PlanOutcome& best);
  // CompareWithOptimum kept the MILP's plan.
  bool solver_plan_kept() const { return solver_plan_; }
  // Judges `best` (the plan in hand) and takes back the moves it holds
  // without; the plan kept is left in hand. False: the judge refused the
  // whole plan, which is taken back.
  absl::StatusOr<bool> TrimToNeededMoves(const PlanOutcome& best);
  // TrimToNeededMoves, then applies what is kept.
  absl::StatusOr<PlannerResult> KeepNeededMoves(const PlanOutcome& best);
  // The plan in hand as a point of the frontier (at this search's target).
  absl::StatusOr<FrontierPoint> PointInHand();
  // The target only steers the sweep, no budget: a plan between two of the
  // frontier's, under a cap that keeps it from the dearer one's level
  // (PlanCappedAt). The rule on FLOPs per byte then applies without a
  // judgement of whether the plan met it.
  void AimOnlySteers() { aim_is_a_direction_ = true; }
  // One sweep from no moves at this search's target, under the compute cap
  // the planner has, left in hand (PlanCappedAt).
  absl::StatusOr<PlanOutcome> SweepFromNoMoves() {
    return Replan(config_.target_bytes);
  }

 private:
  // A plan at `aim`; the plan in hand is taken back first unless it was
  // made at the same aim.
  absl::StatusOr<PlanOutcome> Plan(int64_t aim) {
    const bool from_no_moves = aim != last_target_;
    if (from_no_moves) TF_RETURN_IF_ERROR(planner_.RevertAll());
    return PlanFresh(aim, from_no_moves);
  }
  absl::StatusOr<PlanOutcome> Replan(int64_t aim) {
    TF_RETURN_IF_ERROR(planner_.RevertAll());
    return PlanFresh(aim, /*from_no_moves=*/true);
  }
  // What a plan at `aim` comes to, for a comparison: when a plan was made
  // at `aim` from no moves before (in any search on this planner), its
  // outcome, and the plan in hand stays; else Plan(aim), left in hand.
  absl::StatusOr<PlanOutcome> Outcome(int64_t aim) {
    if (aim != last_target_) {
      auto known = planner_.known_outcomes().find(SweepAt(aim));
      if (known != planner_.known_outcomes().end()) return known->second;
    }
    return Plan(aim);
  }
  // The sweep from no moves at `aim` with the chains and cap in force.
  PlanKey SweepAt(int64_t aim) const {
    return PlanKey{aim, config_.chains, planner_.max_extra_flops()};
  }
  // The plan in hand, made for `target`, at `peak`.
  PlanOutcome InHand(int64_t target, int64_t peak) const {
    return PlanOutcome{target, peak, planner_.kept_cost(),
                       planner_.kept_flops(), planner_.move_flops()};
  }
  absl::StatusOr<PlanOutcome> PlanFresh(int64_t aim, bool from_no_moves) {
    last_target_ = aim;
    TF_ASSIGN_OR_RETURN(const int64_t peak, planner_.Plan(aim));
    fresh_plan_ = FreshPlan{SweepAt(aim), peak, planner_.kept_flops()};
    fresh_revision_ = planner_.plan_revision();
    const PlanOutcome outcome = InHand(aim, peak);
    if (from_no_moves) {
      planner_.known_outcomes()[fresh_plan_.sweep] = outcome;
    }
    return outcome;
  }
  // The judge's verdict of `outcome`, a plan made from no moves at its
  // target with the chains and compute cap in force: known (nothing is
  // made), else the plan made again if it is not in hand, and judged.
  absl::StatusOr<PlanVerdict> VerdictOf(const PlanOutcome& outcome) {
    auto known = planner_.fresh_verdicts().find(
        FreshPlan{SweepAt(outcome.target), outcome.peak, outcome.flops});
    if (known != planner_.fresh_verdicts().end()) return known->second;
    if (outcome.target != last_target_) {
      TF_RETURN_IF_ERROR(Plan(outcome.target).status());
    }
    return Judge();
  }
  // Judges the plan in hand by the platform's figure (keep_plan).
  absl::StatusOr<PlanVerdict> Judge();
  // The rule on FLOPs per byte, on the plan in hand, unless it meets the
  // budget by the platform's figure: the budget comes first, and the compute
  // cap bounds what it spends.
  absl::Status ApplyOutOfLineRule();
  // Judge(), or without a judge the tracker's peak.
  absl::StatusOr<PlanVerdict> JudgeOrTrack() {
    if (config_.keep_plan == nullptr) {
      return PlanVerdict{true, planner_.tracker_peak(), ""};
    }
    return Judge();
  }
  // Solves for the MILP's plan from `start` (`path`'s): at the budget, and
  // where `path` missed it, at `path`'s peak with what is left of the time.
  // Fills `report`.
  absl::StatusOr<OptimalSolve> SolveOptimal(const OptimalProblem& problem,
                                            const PlanOutcome& best,
                                            absl::Span<const double> start,
                                            double seconds,
                                            OptimalResult& report);
  // Planning is deterministic: the whole plan at `aim` again, under the
  // rule on FLOPs per byte.
  absl::Status MakeWholePlanAgain(int64_t aim) {
    TF_RETURN_IF_ERROR(planner_.RevertAll());
    TF_RETURN_IF_ERROR(planner_.Plan(aim).status());
    if (!out_of_line_rule_applied_) return absl::OkStatus();
    return planner_.TakeBackOutOfLine(planner_.OutOfLineMoves()).status();
  }

  Planner& planner_;
  const PlannerConfig& config_;
  int64_t last_target_;
  bool solver_plan_ = false;  // the plan in hand is the MILP's
  // The plan kept took back its moves far out of line.
  bool out_of_line_rule_applied_ = false;
  bool aim_is_a_direction_ = false;  // AimOnlySteers
  // The last verdict, and the plan it was of.
  bool judged_ = false;
  int64_t judged_revision_ = 0;
  PlanVerdict judged_verdict_;
  // How the plan in hand was made, while it is as PlanFresh left it.
  FreshPlan fresh_plan_{};
  int64_t fresh_revision_ = -1;
};

// The search for one budget, up to the plan it keeps, left in hand.
absl::StatusOr<PlanOutcome> SearchFor(PlanSearch& search);

// The plan the search aimed at `aim` keeps (for `path`, `standard`, ...;
// never the solver's), made from no moves and left in hand, with its point
// and its outcome.
struct AimedPlan {
  FrontierPoint point;
  PlanOutcome best;
  PlanRecipe recipe;  // how the plan kept was made
  // The kept moves' own FLOPs, which a compute cap is checked against (the
  // point's extra FLOPs, less the runs the plan leaves unread, are lower).
  double move_flops = 0;
  // Made again by a whole search: its recipe did not replay.
  bool searched_again = false;
  // The compute cap, not the aim, stopped it at its peak.
  bool capped = false;
};
// The search's config for a frontier aim: `config` aimed at `aim`, without
// the solver (it runs once, for the plan chosen).
PlannerConfig RungConfig(const PlannerConfig& config, int64_t aim);
absl::StatusOr<AimedPlan> PlanAimedAt(Planner& planner,
                                      const PlannerConfig& config, int64_t aim);
// A plan between two neighbours of the frontier (FrontierSearch::
// wide_step_flops): one sweep from no moves at `aim` with the compute cap at
// `cap_flops`, trimmed of unneeded moves as every aim's plan is, and left in
// hand. Its point says the cap; the cap stopping it is not `capped`.
absl::StatusOr<AimedPlan> PlanCappedAt(Planner& planner,
                                       const PlannerConfig& config, int64_t aim,
                                       double cap_flops);
// For `path` (`config.chains`): one sweep of single recomputations from no
// moves at `aim`, without chains, and left in hand. At the floor aim, where
// chains stall above the floor, single recomputations can end lower
// (ResNet-50 for h100_sxm at batch 64: 0.660 of its figure at the pass's
// hook, +16.1%, where chains end at 0.675 at +19.1%). Where the sweep's peak by
// the tracker is at most `judged_within`, it is trimmed and judged as every
// aim's plan is, its point saying it was made without chains; else nullopt (not
// judged).
absl::StatusOr<std::optional<AimedPlan>> PlanUnchainedAt(
    Planner& planner, const PlannerConfig& config, int64_t aim,
    int64_t judged_within);
// The plan of `point` made again from no moves: PlanUnchainedAt where it
// was made without chains, PlanCappedAt where it has a cap of its own, else
// PlanAimedAt.
absl::StatusOr<AimedPlan> PlanPointAgain(Planner& planner,
                                         const PlannerConfig& config,
                                         const FrontierPoint& point);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLAN_SEARCH_H_
