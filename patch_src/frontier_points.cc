#include "xla/service/remat/frontier_points.h"

#include <algorithm>
#include <chrono>  // NOLINT(build/c++11): the judge's time, for the report
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/log/log.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/background_frees.h"
#include "xla/service/remat/background_task.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/judging_copy.h"
#include "xla/service/remat/lane_pool.h"
#include "xla/service/remat/phase_clock.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/plan_search.h"
#include "xla/service/remat/planner.h"
#include "xla/service/remat/planner_edits.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/planner_values.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

namespace {

// A frontier plan the platform's figure puts under its aim by more than
// 1/kOvershootDivisor of it recomputed more than the aim needed: aims are
// raised, at most kRaisedAims plans each, one more when the last lands over
// the aim by at most 1/kOvershootDivisor of it (RaiseOvershootingAim).
constexpr int64_t kOvershootDivisor = 50;
constexpr int kRaisedAims = 2;
// Plans between neighbours of the frontier made at once (FillWideSteps).
constexpr int kFillsAtOnce = 2;
// `path`'s plan of single recomputations at the floor aim is judged only
// where the tracker puts it at most 1/kUnchainedCloseDivisor above the
// chains' plan there (PlanAim): the platform's figure and the
// tracker's count differ by about that (alignment, buffers the platform
// shares), so a plan further above by the tracker does not end lower by
// the figure, and a judgement costs a buffer assignment of the whole
// module. (ResNet-50 for h100_sxm at batch 64: 0.4% above by the tracker,
// 2.3% below by the figure, and cheaper; DenseNet-121: 6% above by the
// tracker, 5% above by the figure.)
constexpr int64_t kUnchainedCloseDivisor = 50;

// The plans of the frontier search so far, in the order they were made.
struct MadeFrontier {
  std::vector<FrontierPoint> points;
  std::vector<AimedPlan> plans;  // plans[i] made points[i]
  // The compute cap, not the aim, stopped some plan at its peak: what the
  // report says when no plan is chosen.
  bool capped = false;
  // Where the lanes' copies of the module are freed, each in a thread of
  // its own once its aims are planned (about a second each on DenseNet-121's
  // CPU step): `given` (FrontierSearch::frees, which the pass's driver keeps
  // to its end), else threads joined when this frontier is gone.
  BackgroundFrees& FreesIn(BackgroundFrees* given) {
    if (given != nullptr) return *given;
    if (own_frees == nullptr) own_frees = std::make_unique<BackgroundFrees>();
    return *own_frees;
  }
  std::unique_ptr<BackgroundFrees> own_frees;
  void Add(AimedPlan aimed) {
    capped |= aimed.capped;
    points.push_back(aimed.point);
    plans.push_back(std::move(aimed));
  }
  // Whether `point` is a plan made already: the same figure, the same FLOPs.
  bool MadeAlready(const FrontierPoint& point) const {
    return absl::c_any_of(points, [&](const FrontierPoint& p) {
      return p.kept && p.peak_bytes == point.peak_bytes &&
             p.extra_flops == point.extra_flops;
    });
  }
  // Adds `aimed` where it is kept and not a plan made already, and says
  // whether it did; else only whether the cap stopped it counts.
  bool AddNew(AimedPlan aimed) {
    if (!aimed.point.kept || MadeAlready(aimed.point)) {
      capped |= aimed.capped;
      return false;
    }
    Add(std::move(aimed));
    return true;
  }
  // The points an earlier compile made, with the recipes it kept: none is
  // this search's until MakeAgain makes it and finds it on its point.
  static MadeFrontier Known(const KnownFrontier& known) {
    MadeFrontier made;
    made.capped = known.capped;
    made.points = known.points;
    for (size_t i = 0; i < known.points.size(); ++i) {
      AimedPlan aimed;
      aimed.point = known.points[i];
      if (i < known.recipes.size() && known.recipes[i].has_value()) {
        aimed.recipe = *known.recipes[i];
      } else {
        aimed.recipe.replayable = false;
      }
      made.plans.push_back(std::move(aimed));
    }
    made.unverified.assign(known.points.size(), true);
    return made;
  }
  // Per point: known, and not yet made in this search.
  std::vector<bool> unverified;
  // The points and recipes, for a later compile.
  std::shared_ptr<const KnownFrontier> ToKnown() const {
    auto known = std::make_shared<KnownFrontier>();
    known->points = points;
    known->capped = capped;
    for (const AimedPlan& aimed : plans) {
      std::optional<PlanRecipe> recipe;
      if (aimed.recipe.replayable) {
        recipe = aimed.recipe;
        recipe->first_sweep = nullptr;  // a later compile sweeps
      }
      known->recipes.push_back(std::move(recipe));
    }
    return known;
  }
};

bool SamePoint(const FrontierPoint& a, const FrontierPoint& b) {
  return a.kept == b.kept && a.peak_bytes == b.peak_bytes &&
         a.extra_flops == b.extra_flops;
}

// The plan in hand as a point of the frontier, judged as if aimed at `aim`.
absl::StatusOr<FrontierPoint> PointInHand(Planner& planner,
                                          const PlannerConfig& config,
                                          int64_t aim) {
  const PlannerConfig rung = RungConfig(config, aim);
  PlanSearch search(planner, rung);
  return search.PointInHand();
}

// Plan `index` of `made` in hand again: replayed from its recipe, or if the
// replay does not come to the same plan, searched for again. A known point
// (MadeFrontier::Known) must land on its point, replayed (judged once) or
// else searched for (`optimal` searches: it compares the search's best plan
// with its solver's); nullopt when the search does not land there either
// (the known frontier is stale). From then on it is this search's point.
absl::StatusOr<std::optional<AimedPlan>> MakeAgain(Planner& planner,
                                                   const PlannerConfig& config,
                                                   MadeFrontier& made,
                                                   int index) {
  AimedPlan& aimed = made.plans[index];
  const bool unverified = !made.unverified.empty() && made.unverified[index];
  if (!unverified || !config.optimal.has_value()) {
    TF_ASSIGN_OR_RETURN(bool replayed, planner.Replay(aimed.recipe, config));
    if (replayed && unverified) {
      TF_ASSIGN_OR_RETURN(const FrontierPoint landed,
                          PointInHand(planner, config, aimed.point.aim_bytes));
      replayed = SamePoint(landed, aimed.point);
    }
    if (replayed) {
      if (unverified) made.unverified[index] = false;
      return aimed;
    }
  }
  TF_ASSIGN_OR_RETURN(AimedPlan again,
                      PlanPointAgain(planner, config, aimed.point));
  if (unverified) {
    if (!SamePoint(again.point, aimed.point)) return std::nullopt;
    made.unverified[index] = false;
    aimed = again;
    return again;
  }
  VLOG(1) << "rematerialization: the plan aimed at " << aimed.point.aim_bytes
          << " did not replay; searched for again";
  again.searched_again = true;
  return again;
}

// Plans aimed above `aim` when no plan made so far (`made`) lies within it
// and close to it: the planner's tracker counts apart buffers the platform
// shares (an in-place fusion writing over its operand, ...), so a plan the
// tracker sees at its aim can lie far under it by the platform's figure,
// having recomputed more than the aim needed (docs/measured.md). The plans
// made bracket the level `aim`: the
// one aimed highest that stayed within it, and the one aimed lowest above
// that which did not (else `start`, the plan of no moves: aimed at the
// tracker's start, its peak the platform's figure). Each raise aims where
// the line through the two meets `aim` (peaks rise about as aims do), kept
// off the bracket's ends. Every plan is a point: none depends on a budget.
absl::Status RaiseOvershootingAim(Planner& planner, const PlannerConfig& config,
                                  int64_t aim, const FrontierPoint& start,
                                  MadeFrontier& made) {
  const int64_t close_enough = aim / kOvershootDivisor;
  FrontierPoint within{0, 0};  // aimed highest of those within `aim`
  int64_t highest = 0;         // the highest peak within `aim`
  for (const FrontierPoint& p : made.points) {
    if (!p.kept || p.peak_bytes > aim) continue;
    if (p.aim_bytes > within.aim_bytes) within = p;
    highest = std::max(highest, p.peak_bytes);
  }
  FrontierPoint over = start;  // aimed lowest above `within`, over it
  for (const FrontierPoint& p : made.points) {
    if (p.kept && p.peak_bytes > aim && p.aim_bytes > within.aim_bytes &&
        p.aim_bytes < over.aim_bytes) {
      over = p;
    }
  }
  int tries = kRaisedAims;
  for (int step = 0;
       step < tries && within.aim_bytes > 0 && aim - highest > close_enough &&
       over.aim_bytes - within.aim_bytes > close_enough;
       ++step) {
    const double bracket = over.aim_bytes - within.aim_bytes;
    const double share =
        static_cast<double>(aim - within.peak_bytes) /
        std::max<int64_t>(over.peak_bytes - within.peak_bytes, 1);
    const int64_t next =
        within.aim_bytes +
        static_cast<int64_t>(bracket * std::clamp(share, 0.125, 0.875));
    TF_ASSIGN_OR_RETURN(AimedPlan aimed, PlanAimedAt(planner, config, next));
    const FrontierPoint point = aimed.point;
    // A plan refused, or made already: the bracket's aims map to it, so
    // raises between the same ends land there again. (Whether the cap
    // stopped it still counts, as for any plan made.)
    if (!made.AddNew(std::move(aimed))) break;
    if (point.peak_bytes <= aim) {
      within = point;
      highest = std::max(highest, point.peak_bytes);
    } else {
      // The last raise landed just over the aim: a plan within it lies
      // close below, far cheaper than `within` (the decoder at 0.5x:
      // 0.5009 against 0.400 at twice the FLOPs). One more, once.
      if (step + 1 == tries && tries == kRaisedAims &&
          point.peak_bytes - aim <= close_enough) {
        ++tries;
      }
      over = point;
    }
  }
  return absl::OkStatus();
}

// A plan between two neighbours of the frontier: one sweep at `aim` under
// the compute cap `cap` (PlanCappedAt).
struct StepFill {
  int64_t aim = 0;
  double cap = 0;
  bool operator==(const StepFill& other) const {
    return aim == other.aim && cap == other.cap;
  }
  template <typename H>
  friend H AbslHashValue(H h, const StepFill& fill) {
    return H::combine(std::move(h), fill.aim, fill.cap);
  }
};

// Where between two neighbours' moves' FLOPs a step's cap is put, in turn:
// a capped sweep can spend part of its cap on moves that do not lower the
// peak, so a cap halfway that lands on the cheaper neighbour is followed by
// one closer to the dearer (and one closer to the cheaper, where that
// landed on the dearer).
constexpr double kStepCapShares[] = {0.5, 0.75, 0.25};

// The steps between neighbours of `made`'s frontier (NonDominated) wider in
// extra FLOPs than `search`'s wide_step_flops, widest first, at most
// `count`: each filled at the
// lower neighbour's aim, or its peak where it missed its aim (the lowest
// aims lie below the floor: a capped sweep aimed far below what it can
// reach spends its cap on the first positions it lowers), under the first
// cap of kStepCapShares not in `tried`.
std::vector<StepFill> WidestSteps(const MadeFrontier& made,
                                  const FrontierSearch& search,
                                  const absl::flat_hash_set<StepFill>& tried,
                                  int count) {
  const std::vector<int> frontier = NonDominated(made.points);
  std::vector<std::pair<double, StepFill>> steps;
  for (size_t k = 0; k + 1 < frontier.size(); ++k) {
    const FrontierPoint& lower = made.points[frontier[k]];
    const FrontierPoint& higher = made.points[frontier[k + 1]];
    const double step = lower.extra_flops - higher.extra_flops;
    // Peaks within the lookup's noise of each other are no reason to skip
    // a step: a plan between, nearly as low as the dearer one and far
    // cheaper, makes the dearer no plan (ResNet-50's CPU step: 0.6355 of
    // its figure at +10.3% beside 0.6335 at +12.9%).
    if (step <= search.wide_step_flops) continue;
    // The cap is checked against the moves' own FLOPs.
    const double lower_moves = made.plans[frontier[k]].move_flops;
    const double higher_moves = made.plans[frontier[k + 1]].move_flops;
    for (double share : kStepCapShares) {
      const StepFill fill{std::max(lower.aim_bytes, lower.peak_bytes),
                          higher_moves + (lower_moves - higher_moves) * share};
      if (!tried.contains(fill)) {
        steps.push_back({step, fill});
        break;
      }
    }
  }
  // Widest first; equal widths lowest first (the frontier's order).
  std::stable_sort(
      steps.begin(), steps.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<StepFill> widest;
  for (int i = 0; i < static_cast<int>(steps.size()) && i < count; ++i) {
    widest.push_back(steps[i].second);
  }
  return widest;
}

// Plans between neighbours of the frontier that differ in extra FLOPs by
// more than FrontierSearch::wide_step_flops, at most max_step_fills of
// them, in rounds of the kFillsAtOnce widest steps (WidestSteps). The aims
// alone leave such steps where the greedy sweep takes dear moves that
// cheaper ones would nearly match; under the cap it takes those instead
// (ResNet-101 V2's CPU step: 0.6102 of its figure at +14.8%, and under a
// cap of 9.2%, 0.6124 at +9.1%). A round's first plan is made by `first`,
// its second beside it by `second` when given, else after it by `first`:
// which planner makes which plan does not depend on timing. A step tried
// is not tried again; a plan made already, or refused, is no point. The
// plans depend on the points alone. Returns the seconds the planners spent.
absl::StatusOr<double> FillWideSteps(Planner& first, Planner* second,
                                     const PlannerConfig& config,
                                     MadeFrontier& made) {
  const FrontierSearch& search = *config.frontier;
  double busy = 0;
  if (!search.FillsSteps()) return busy;
  absl::flat_hash_set<StepFill> tried;
  for (int fills = 0; fills < search.max_step_fills;) {
    const std::vector<StepFill> round =
        WidestSteps(made, search, tried,
                    std::min(kFillsAtOnce, search.max_step_fills - fills));
    if (round.empty()) break;
    fills += round.size();
    tried.insert(round.begin(), round.end());
    const auto started = std::chrono::steady_clock::now();
    std::optional<BackgroundTask<AimedPlan>> beside;
    double beside_seconds = 0;
    if (round.size() > 1 && second != nullptr) {
      beside.emplace([&, fill = round[1]]() -> absl::StatusOr<AimedPlan> {
        const auto planning = std::chrono::steady_clock::now();
        absl::StatusOr<AimedPlan> plan =
            PlanCappedAt(*second, config, fill.aim, fill.cap);
        beside_seconds = SecondsSince(planning);
        return plan;
      });
    }
    std::vector<absl::StatusOr<AimedPlan>> plans;
    plans.push_back(PlanCappedAt(first, config, round[0].aim, round[0].cap));
    if (beside.has_value()) {
      plans.push_back(beside->Wait());
    } else if (round.size() > 1) {
      plans.push_back(PlanCappedAt(first, config, round[1].aim, round[1].cap));
    }
    busy += SecondsSince(started) + beside_seconds;
    for (absl::StatusOr<AimedPlan>& plan : plans) {
      if (!plan.ok()) return plan.status();
      made.AddNew(*std::move(plan));
    }
  }
  return busy;
}

// What the frontier search makes for one aim: the aim's plan and, for
// `path`'s floor aim, the plan of single recomputations where it is judged
// (PlanAim).
struct AimPlans {
  AimedPlan aimed;
  std::optional<AimedPlan> unchained;
};

// The plans of aim `aim`: the aim's whole search and, for `path` (chains) at
// the floor aim, one sweep of single recomputations (PlanUnchainedAt): near
// the floor, chains can stall above what single recomputations reach.
absl::StatusOr<AimPlans> PlanAim(Planner& planner, const PlannerConfig& config,
                                 int64_t aim) {
  AimPlans plans;
  TF_ASSIGN_OR_RETURN(plans.aimed, PlanAimedAt(planner, config, aim));
  if (!config.chains || config.floor_bytes <= 0 || aim != config.floor_bytes) {
    return plans;
  }
  // Where the chains' plan was refused, any plan of single recomputations is
  // judged.
  const int64_t chained = plans.aimed.recipe.tracker_peak;
  const int64_t judged_within = plans.aimed.point.kept
                                    ? chained + chained / kUnchainedCloseDivisor
                                    : std::numeric_limits<int64_t>::max();
  TF_ASSIGN_OR_RETURN(plans.unchained,
                      PlanUnchainedAt(planner, config, aim, judged_within));
  return plans;
}

// `plans`, aim `aim`'s, added to `made`: the aim's plan, raised where the
// platform's figure put it well below the aim (RaiseOvershootingAim), then
// the plan of single recomputations where it is not a plan made already.
// (After the raises, which bracket the aims by the chains' plans alone.)
absl::Status AddAimsPlans(Planner& planner, const PlannerConfig& config,
                          int64_t aim, const FrontierPoint& start,
                          AimPlans plans, MadeFrontier& made) {
  const bool kept = plans.aimed.point.kept;
  made.Add(std::move(plans.aimed));
  if (kept) {
    TF_RETURN_IF_ERROR(RaiseOvershootingAim(planner, config, aim, start, made));
  }
  if (plans.unchained.has_value()) made.AddNew(*std::move(plans.unchained));
  return absl::OkStatus();
}

// The order the lanes start the aims in (highest first): lowest first. The
// searches of the lowest aims, at the floor and below, are the longest (a
// missed budget's ladder and descents: DenseNet-121 on CPU, 2.4 and 2.6 s
// where the three highest take 0.2 to 0.6 s); started last, one of them
// ended the search while the other lane had nothing left.
std::vector<int> LowestAimsFirst(int count) {
  std::vector<int> order(count);
  for (int i = 0; i < count; ++i) order[i] = count - 1 - i;
  return order;
}

// A planner of the frontier search's own, on a copy of the module, which
// plans some of the aims while other lanes plan the rest.
class PlanningLane {
 public:
  // The copy of `module` (with `computation`) and its costs are this
  // lane's; `config`'s memory model is of the module's instructions, so the
  // lane builds its own. Its planner judges through `search`'s verdicts and
  // learns fused computations through `facts` (every lane's).
  static absl::StatusOr<std::unique_ptr<PlanningLane>> Make(
      const HloModule& module, const HloComputation& computation,
      const PlannerConfig& config, const SizeFunction& size_fn, Planner& search,
      std::shared_ptr<FusedBodyFactsStore> facts) {
    std::unique_ptr<PlanningLane> lane(new PlanningLane());
    // Clone("") keeps every name, as the planned copies do.
    lane->module_ = module.Clone("");
    HloComputation* copy =
        lane->module_->GetComputationWithName(computation.name());
    if (copy == nullptr) {
      return absl::InternalError(absl::StrCat(
          "rematerialization: the lane's copy lost ", computation.name()));
    }
    TF_ASSIGN_OR_RETURN(lane->costs_, AnalyzeCosts(*lane->module_, size_fn));
    PlannerConfig own = config;
    own.entry_memory = nullptr;
    lane->planner_ = std::make_unique<Planner>(lane->module_.get(), copy, own,
                                               size_fn, *lane->costs_);
    TF_RETURN_IF_ERROR(lane->planner_->Init());
    lane->planner_->ShareVerdictsOf(search);
    lane->planner_->UseFusedBodyFacts(std::move(facts));
    return lane;
  }
  Planner& planner() { return *planner_; }

 private:
  PlanningLane() = default;
  std::unique_ptr<HloModule> module_;
  std::unique_ptr<RematCostAnalysis> costs_;
  std::unique_ptr<Planner> planner_;  // reads module_ and costs_
};

// The plans between neighbours (FillWideSteps), two at once on the lanes
// kept for them, `fill_lane` (the first pool lane's) and `own_lane` (the
// caller's); with one lane, one after the other on `planner`. `fill_lane`
// is then freed, its counts put in `fill_lane_counts`. Returns the
// planners' seconds.
absl::StatusOr<double> FillOnKeptLanes(Planner& planner, PlanningLane* own_lane,
                                       std::unique_ptr<PlanningLane> fill_lane,
                                       const PlannerConfig& config,
                                       MadeFrontier& made,
                                       BackgroundFrees& frees,
                                       Planner::Counts* fill_lane_counts) {
  Planner* first = fill_lane != nullptr ? &fill_lane->planner() : &planner;
  Planner* second = fill_lane != nullptr && own_lane != nullptr
                        ? &own_lane->planner()
                        : nullptr;
  absl::StatusOr<double> filling = FillWideSteps(*first, second, config, made);
  if (fill_lane != nullptr) {
    if (fill_lane_counts != nullptr) {
      *fill_lane_counts = fill_lane->planner().counts();
    }
    frees.Free(std::move(fill_lane));
  }
  return filling;
}

// The lanes' searches counted in `planner`'s, and the judge's time its
// share of the time the lanes and the caller took together (`busy`, the
// caller's; `elapsed`, the search's), as the report's phases are shares of
// the pass's time. (A wait for a verdict another lane is judging counts as
// planning.) A lane that could not copy the module planned nothing: the
// others made its share, but the copy failing is a bug to report.
absl::Status CountTheLanes(
    Planner& planner,
    LanePool<std::unique_ptr<PlanningLane>, AimPlans>::Finished finished,
    absl::Span<const Planner::Counts> lane_counts,
    const Planner::Counts& own_counts, double judged_before, double busy,
    double elapsed) {
  double judged =
      planner.judge_seconds() - judged_before + own_counts.judge_seconds;
  planner.AddCounts(own_counts);
  for (size_t lane = 0; lane < lane_counts.size(); ++lane) {
    busy += finished.busy_seconds[lane];
    TF_RETURN_IF_ERROR(finished.workers[lane].status());
    judged += lane_counts[lane].judge_seconds;
    planner.AddCounts(lane_counts[lane]);
  }
  const double share = busy > 0 ? std::min(1.0, elapsed / busy) : 1.0;
  planner.set_judge_seconds(judged_before + judged * share);
  return absl::OkStatus();
}

// The frontier's points: every aim's plan, and where the platform's figure
// put a plan well below its aim, the plans of the raised aims that close the
// gap (RaiseOvershootingAim), made by `planner` in the aims' order. With
// more than one lane (FrontierSearch::lanes), the aims' plans are made by
// lanes, each a planner on its own copy of the module, the caller's among
// them: whichever is free takes the next aim, and `planner` raises each aim
// as soon as its plan is in. An aim's raises see the plans of the aims above
// it and their raises; each aim's search starts from nothing it did not make
// itself (Planner::ForgetSearches) but the verdicts, which all the planners
// share (VerdictStore): the points, and the sweeps made, are those one
// planner makes, aim after aim. Then plans between neighbours far apart in
// FLOPs (FillOnKeptLanes): by the first lane and the caller's, or with one
// lane by `planner`.
absl::StatusOr<MadeFrontier> FrontierPoints(Planner& planner,
                                            const HloModule& module,
                                            const HloComputation& computation,
                                            const PlannerConfig& config,
                                            const SizeFunction& size_fn) {
  MadeFrontier made;
  // Aims are the tracker's; peaks the platform's figure.
  FrontierPoint start;
  start.aim_bytes = planner.initial_peak();
  start.peak_bytes = config.frontier->start_peak_bytes > 0
                         ? config.frontier->start_peak_bytes
                         : start.aim_bytes;
  const std::vector<int64_t>& aims = config.frontier->aims;
  const int lanes = std::min<int>(config.frontier->lanes, aims.size());
  // The lanes' modules are cloned from `module` alike: they learn its fused
  // computations once between them.
  auto facts = std::make_shared<FusedBodyFactsStore>(config.alias_info);
  auto make_lane = [&] {
    return PlanningLane::Make(module, computation, config, size_fn, planner,
                              facts);
  };
  const int copies = std::max(0, lanes - 1);
  BackgroundFrees& frees = made.FreesIn(config.frontier->frees);
  // Each lane's counts: written as it retires, read after Finish.
  std::vector<Planner::Counts> lane_counts(copies);
  // Plans between neighbours follow the aims: the first lane and the
  // caller's make them, so that `planner`'s module sees none of them.
  const bool fills_follow = config.frontier->FillsSteps();
  std::unique_ptr<PlanningLane> fill_lane;  // lane 0's, once it retires
  LanePool<std::unique_ptr<PlanningLane>, AimPlans> pool(
      copies, aims.size(), make_lane,
      [&](std::unique_ptr<PlanningLane>& lane, int i) {
        return PlanAim(lane->planner(), config, aims[i]);
      },
      [&](int lane, std::unique_ptr<PlanningLane>& worker) {
        if (fills_follow && lane == 0) {
          fill_lane = std::move(worker);  // read after Finish
          return;
        }
        lane_counts[lane] = worker->planner().counts();
        frees.Free(std::move(worker));
      },
      LowestAimsFirst(aims.size()));
  // The caller is one of the lanes, and plans the aims it takes on a copy
  // too (made while the other lanes make theirs; nothing writes the module
  // before Claim returns): `planner`'s module then sees only the raises and
  // the chosen plan made again, in an order that does not depend on timing,
  // so neither do the names and ids of the clones the pass adds.
  std::unique_ptr<PlanningLane> own_lane;
  if (lanes > 1) {
    TF_ASSIGN_OR_RETURN(own_lane, make_lane());
  }
  Planner::Counts own_counts;
  // Freed likewise once every aim is started, unless it fills steps.
  auto free_own_lane = [&] {
    if (own_lane == nullptr) return;
    own_counts = own_lane->planner().counts();
    frees.Free(std::move(own_lane));
  };
  const auto started = std::chrono::steady_clock::now();
  const double judged_before = planner.judge_seconds();
  double busy = 0;  // the caller's seconds planning and raising
  for (size_t i = 0; i < aims.size(); ++i) {
    // Until aim i is planned, the caller plans the next aim no one has
    // started. An error ends the search (the pool stops the lanes).
    while (!pool.Done(i)) {
      const std::optional<int> task = pool.Claim();
      if (!task.has_value()) {
        if (!fills_follow) free_own_lane();
        break;
      }
      Planner& aims_planner =
          own_lane != nullptr ? own_lane->planner() : planner;
      const auto planning = std::chrono::steady_clock::now();
      absl::StatusOr<AimPlans> plans =
          PlanAim(aims_planner, config, aims[*task]);
      if (!plans.ok()) return plans.status();
      pool.Give(*task, *std::move(plans));
      busy += SecondsSince(planning);
    }
    TF_ASSIGN_OR_RETURN(AimPlans plans, pool.Take(i));
    const auto raising = std::chrono::steady_clock::now();
    TF_RETURN_IF_ERROR(
        AddAimsPlans(planner, config, aims[i], start, std::move(plans), made));
    busy += SecondsSince(raising);
  }
  // Every aim is taken: the lanes have retired.
  auto finished = pool.Finish();
  TF_ASSIGN_OR_RETURN(
      const double filling,
      FillOnKeptLanes(planner, own_lane.get(), std::move(fill_lane), config,
                      made, frees,
                      lane_counts.empty() ? nullptr : &lane_counts[0]));
  busy += filling;
  free_own_lane();
  TF_RETURN_IF_ERROR(CountTheLanes(planner, std::move(finished), lane_counts,
                                   own_counts, judged_before, busy,
                                   SecondsSince(started)));
  return made;
}

// The search's points, then each other schedule's (FrontierPoint::schedule
// says which).
std::vector<FrontierPoint> WithOtherSchedules(
    const MadeFrontier& made,
    absl::Span<const std::shared_ptr<const KnownFrontier>> others) {
  std::vector<FrontierPoint> all = made.points;
  for (size_t k = 0; k < others.size(); ++k) {
    for (FrontierPoint point : others[k]->points) {
      point.schedule = static_cast<int>(k) + 1;
      all.push_back(point);
    }
  }
  return all;
}

// Point `index` of `all` (WithOtherSchedules), which lies on another
// schedule, alone with its recipe.
std::shared_ptr<const KnownFrontier> OnePointOf(
    absl::Span<const FrontierPoint> all, int index,
    absl::Span<const std::shared_ptr<const KnownFrontier>> others) {
  const int schedule = all[index].schedule;
  int first = 0;  // the index in `all` of that schedule's first point
  while (all[first].schedule != schedule) ++first;
  const KnownFrontier& other = *others[schedule - 1];
  const int own = index - first;
  auto one = std::make_shared<KnownFrontier>();
  one->points = {other.points[own]};
  one->points[0].schedule = 0;  // on that schedule, its own
  one->recipes = {own < static_cast<int>(other.recipes.size())
                      ? other.recipes[own]
                      : std::nullopt};
  one->capped = other.capped;
  return one;
}

}  // namespace

absl::StatusOr<PlannerResult> PlanFromFrontier(
    Planner& planner, const HloModule& module,
    const HloComputation& computation, const PlannerConfig& config,
    const SizeFunction& size_fn) {
  FrontierSource source = FrontierSource::kSearched;
  MadeFrontier made;
  if (config.frontier->known != nullptr) {
    made = MadeFrontier::Known(*config.frontier->known);
    source = FrontierSource::kKnown;
  } else {
    TF_ASSIGN_OR_RETURN(
        made, FrontierPoints(planner, module, computation, config, size_fn));
  }
  std::vector<std::shared_ptr<const KnownFrontier>> others;
  if (source == FrontierSource::kSearched &&
      config.frontier->other_schedules != nullptr) {
    if (config.applicable != nullptr) {
      return absl::InvalidArgumentError(
          "rematerialization: other schedules are searched only where any "
          "plan applies");
    }
    // The module as given: the raises left their last plan in it.
    TF_RETURN_IF_ERROR(planner.RevertAll());
    TF_ASSIGN_OR_RETURN(others,
                        config.frontier->other_schedules(module, made.points));
  }
  const std::vector<FrontierPoint> all = WithOtherSchedules(made, others);
  std::optional<int> chosen = config.frontier->choose(all);
  PlannerResult result;
  if (chosen.has_value() && all[*chosen].schedule != 0) {
    // Made by the caller, on that schedule: nothing is applied here.
    TF_RETURN_IF_ERROR(planner.StartSearch(config));
    TF_ASSIGN_OR_RETURN(result, planner.Materialize());
    result.frontier_chosen_elsewhere = OnePointOf(all, *chosen, others);
    result.frontier = all;
    result.frontier_chosen = chosen;
    result.frontier_source = source;
    return result;
  }
  while (chosen.has_value()) {
    TF_ASSIGN_OR_RETURN(std::optional<AimedPlan> remade,
                        MakeAgain(planner, config, made, *chosen));
    if (!remade.has_value()) {
      // The known frontier is not this search's: the whole of it is made,
      // from the module as given.
      VLOG(1) << "rematerialization: the known point aimed at "
              << made.points[*chosen].aim_bytes
              << " was not made again; the frontier is searched";
      TF_RETURN_IF_ERROR(planner.StartSearch(config));
      TF_ASSIGN_OR_RETURN(
          made, FrontierPoints(planner, module, computation, config, size_fn));
      source = FrontierSource::kKnownStale;
      chosen = config.frontier->choose(made.points);
      continue;
    }
    AimedPlan& aimed = *remade;
    if (config.optimal.has_value()) {
      // `optimal`: the chosen plan beside the MILP's at the budget itself;
      // the better by the judge is kept (CompareWithOptimum).
      PlanSearch at_budget(planner, config);
      TF_ASSIGN_OR_RETURN(aimed.best, at_budget.CompareWithOptimum(aimed.best));
      if (at_budget.solver_plan_kept()) {
        TF_RETURN_IF_ERROR(at_budget.TrimToNeededMoves(aimed.best).status());
      } else {
        // The chosen plan stands, made again as the frontier made it (its
        // recipe: MakeAgain made it once already).
        TF_ASSIGN_OR_RETURN(remade, MakeAgain(planner, config, made, *chosen));
        if (!remade.has_value()) {
          return absl::InternalError(
              "rematerialization: the chosen plan was not made again");
        }
        aimed = *remade;
      }
    }
    TF_ASSIGN_OR_RETURN(const bool applicable,
                        planner.Applicable(config.applicable));
    if (!applicable) {
      made.points[*chosen].kept = false;
      chosen = config.frontier->choose(made.points);
      continue;
    }
    TF_ASSIGN_OR_RETURN(result, planner.Materialize());
    result.frontier_applied_peak = aimed.point.peak_bytes;
    result.frontier_replay_missed = aimed.searched_again;
    break;
  }
  if (!chosen.has_value()) {
    TF_RETURN_IF_ERROR(planner.StartSearch(config));
    TF_ASSIGN_OR_RETURN(result, planner.Materialize());
    result.flops_capped = made.capped;
  }
  // A frontier that spans schedules is not kept: a later compile would
  // answer from this schedule's points alone.
  if (source != FrontierSource::kKnown && others.empty()) {
    result.frontier_made = made.ToKnown();
  }
  result.frontier = others.empty() ? std::move(made.points) : all;
  result.frontier_chosen = chosen;
  result.frontier_source = source;
  return result;
}

}  // namespace remat
}  // namespace xla
