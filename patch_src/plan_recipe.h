// How the plan in hand was made from no moves: the planner's steps since it
// last took every move back. Planning is deterministic, so the same steps
// from no moves make the same plan: the frontier makes its chosen plan
// again from the recipe (a few sweeps) instead of from a whole search
// (tens of sweeps and judgements of the whole module).
#ifndef XLA_SERVICE_REMAT_PLAN_RECIPE_H_
#define XLA_SERVICE_REMAT_PLAN_RECIPE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/sweep_replay.h"

namespace xla {
namespace remat {

enum class PlanStepKind {
  kPlan,               // a sweep at `target`, with `chains`, under `cap`
  kTakeBackUnneeded,   // the moves the peak (or `target`) holds without
  kTakeBackOutOfLine,  // the rule on FLOPs per byte, as priced then
};

struct PlanStep {
  PlanStepKind kind = PlanStepKind::kPlan;
  int64_t target = 0;
  bool chains = true;           // kPlan
  double cap = -1;              // kPlan: the compute cap (negative: none)
  bool recompute_only = false;  // kTakeBackUnneeded
};

struct PlanRecipe {
  std::vector<PlanStep> steps;
  // False once the plan took a step no replay makes (the MILP's plan).
  bool replayable = true;
  // The moves the first step's sweep kept: a replay applies them instead of
  // sweeping again, on any planner of the same module (sweep_replay.h).
  std::shared_ptr<const SweepRecord> first_sweep;
  // The settings the search left, which the report reads.
  bool chains = true;
  double cap = -1;
  // What the plan came to by the planner's own count: a replay that does
  // not come to the same is not the same plan.
  int64_t tracker_peak = 0;
  double extra_flops = 0;
};

// A frontier made before, by an earlier compile of the same module
// (frontier_cache.h): its points, in the order of its aims; how each
// point's plan was made (nullopt: no recipe replays it; no first sweep is
// kept: a replay sweeps); and whether the compute cap, not an aim, stopped
// some plan at its peak.
struct KnownFrontier {
  std::vector<FrontierPoint> points;
  std::vector<std::optional<PlanRecipe>> recipes;  // recipes[i] made points[i]
  bool capped = false;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLAN_RECIPE_H_
