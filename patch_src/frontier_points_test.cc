#include "xla/service/remat/frontier_points.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/remat_planner_test_util.h"
#include "xla/service/remat/remat_test_util.h"

namespace xla {
namespace remat {
namespace {

// The frontier search runs through RunRematPlanner with
// PlannerConfig::frontier set, as the pass runs it.

// The platform shares buffers the tracker counts apart: its figure is under
// the tracker's by two values, so a frontier plan aimed at a budget lands
// far below it. The frontier aims higher as well, and the budget gets the
// cheaper plan that still meets it.
TEST(FrontierPointsTest, AFrontierPlanFarUnderItsAimIsJoinedByAHigherAimsPlan) {
  absl::StatusOr<Planned> lowest = PlanHlo(kFan, AsLowAsPossible());
  ASSERT_TRUE(lowest.ok()) << lowest.status();
  const int64_t start = lowest->result.initial_peak_bytes;
  PlannerConfig config;
  config.target_bytes = start - 3 * kSquareValueBytes;
  config.keep_plan = [&](const HloModule& planned,
                         const AliasInfo*) -> absl::StatusOr<PlanVerdict> {
    const int64_t clones = MovedPastTheTop(planned);
    return PlanVerdict{/*keep=*/true, start - (clones + 2) * kSquareValueBytes,
                       ""};
  };
  config.frontier = FrontierSearch{
      {config.target_bytes}, [&](absl::Span<const FrontierPoint> points) {
        return ChooseFromFrontier(points, config.target_bytes, start,
                                  FrontierRules{});
      }};
  absl::StatusOr<Planned> planned = PlanHlo(kFan, config);
  ASSERT_TRUE(planned.ok()) << planned.status();
  const PlannerResult& result = planned->result;
  ASSERT_GE(result.frontier.size(), 2);
  ASSERT_TRUE(result.frontier_chosen.has_value());
  const FrontierPoint& chosen = result.frontier[*result.frontier_chosen];
  EXPECT_GT(chosen.aim_bytes, config.target_bytes);
  EXPECT_LE(chosen.peak_bytes, config.target_bytes);
  EXPECT_LT(chosen.extra_flops, result.frontier[0].extra_flops);
  EXPECT_LT(result.recomputed, 3);  // the plan aimed at the budget's
  // Made again from its recipe, not by a second search.
  EXPECT_FALSE(result.frontier_replay_missed);
}

// kFan planned as a frontier for a budget one value under the platform's
// figure of its start, which is two values under the tracker's: the figure
// is what the tracker counts less two values and the values recomputed
// past the top. `start_peak_bytes` is what the frontier search is told of
// the figure's start (0: the tracker's start).
absl::StatusOr<Planned> PlanFanUnderItsFigure(bool told_the_figures_start) {
  TF_ASSIGN_OR_RETURN(Planned lowest, PlanHlo(kFan, AsLowAsPossible()));
  const int64_t start = lowest.result.initial_peak_bytes;
  const int64_t figure_start = start - 2 * kSquareValueBytes;
  PlannerConfig config;
  config.target_bytes = figure_start - kSquareValueBytes;
  config.keep_plan = [figure_start](
                         const HloModule& planned,
                         const AliasInfo*) -> absl::StatusOr<PlanVerdict> {
    const int64_t clones = MovedPastTheTop(planned);
    return PlanVerdict{/*keep=*/true, figure_start - clones * kSquareValueBytes,
                       ""};
  };
  const int64_t budget = config.target_bytes;
  config.frontier = FrontierSearch{
      {budget},
      [budget, figure_start](absl::Span<const FrontierPoint> points) {
        return ChooseFromFrontier(points, budget, figure_start,
                                  FrontierRules{});
      },
      told_the_figures_start ? figure_start : 0};
  return PlanHlo(kFan, config);
}

// The aim's plan recomputes three values, far under the budget. The raises
// bracket the aim between it and the plan of no moves, whose peak is the
// figure's start: one of them finds the plan that recomputes one value.
// (With the tracker's start as that peak, they landed on the plan of two.)
TEST(FrontierPointsTest, TheRaisesBracketTheAimByThePlatformsFigure) {
  absl::StatusOr<Planned> planned = PlanFanUnderItsFigure(true);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_GE(planned->result.frontier.size(), 2);
  EXPECT_EQ(MovedPastTheTop(*planned->module), 1);
}

// Told nothing of the figure's start, the line puts the second raise where
// the first landed: that plan is not a second point, and the raises end.
TEST(FrontierPointsTest, ARaiseThatLandsOnAPlanMadeEndsTheRaises) {
  absl::StatusOr<Planned> planned = PlanFanUnderItsFigure(false);
  ASSERT_TRUE(planned.ok()) << planned.status();
  const std::vector<FrontierPoint>& points = planned->result.frontier;
  EXPECT_EQ(points.size(), 2);  // the aim's plan and the first raise's
  for (int i = 0; i < points.size(); ++i) {
    for (int j = i + 1; j < points.size(); ++j) {
      EXPECT_FALSE(points[i].peak_bytes == points[j].peak_bytes &&
                   points[i].extra_flops == points[j].extra_flops)
          << "points " << i << " and " << j << " are one plan";
    }
  }
}

// kFan's config for a budget two values under its `start`, judged by the
// tracker's count less what the plan recomputed past the top.
PlannerConfig FanTwoValuesUnder(int64_t start) {
  PlannerConfig config;
  config.target_bytes = start - 2 * kSquareValueBytes;
  config.keep_plan = [start](const HloModule& planned,
                             const AliasInfo*) -> absl::StatusOr<PlanVerdict> {
    return PlanVerdict{/*keep=*/true,
                       start - MovedPastTheTop(planned) * kSquareValueBytes,
                       ""};
  };
  return config;
}

// kFan's frontier for a budget two values under its start, at aims
// `values_under` values under it; `tune` sets the rest of the search. The
// figure is the tracker's count less what the plan recomputed past the top.
absl::StatusOr<Planned> PlanFanAtAims(
    absl::Span<const int> values_under,
    absl::FunctionRef<void(FrontierSearch&)> tune) {
  TF_ASSIGN_OR_RETURN(Planned lowest, PlanHlo(kFan, AsLowAsPossible()));
  const int64_t start = lowest.result.initial_peak_bytes;
  PlannerConfig config = FanTwoValuesUnder(start);
  const int64_t budget = config.target_bytes;
  FrontierSearch search;
  for (int values : values_under) {
    search.aims.push_back(start - values * kSquareValueBytes);
  }
  search.choose = [budget, start](absl::Span<const FrontierPoint> points) {
    return ChooseFromFrontier(points, budget, start, FrontierRules{});
  };
  tune(search);
  config.frontier = search;
  return PlanHlo(kFan, config);
}

// kFan's frontier at four aims, one value apart, planned by `lanes`
// planners at once.
absl::StatusOr<Planned> PlanFanInLanes(int lanes) {
  return PlanFanAtAims(
      {1, 2, 3, 4}, [lanes](FrontierSearch& search) { search.lanes = lanes; });
}

// Lanes plan the aims at once, each on its own copy of the module, beside
// the caller's planner: the points, the plan chosen, the plan applied and
// the searches made are one planner's.
TEST(FrontierPointsTest, LanesMakeThePlansOnePlannerMakes) {
  absl::StatusOr<Planned> one = PlanFanInLanes(1);
  ASSERT_TRUE(one.ok()) << one.status();
  for (int lanes : {2, 3, 8}) {
    absl::StatusOr<Planned> many = PlanFanInLanes(lanes);
    ASSERT_TRUE(many.ok()) << many.status();
    const std::vector<FrontierPoint>& mine = many->result.frontier;
    const std::vector<FrontierPoint>& theirs = one->result.frontier;
    ASSERT_EQ(mine.size(), theirs.size()) << lanes << " lanes";
    for (int i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i].aim_bytes, theirs[i].aim_bytes) << lanes << ", " << i;
      EXPECT_EQ(mine[i].peak_bytes, theirs[i].peak_bytes) << lanes << ", " << i;
      EXPECT_EQ(mine[i].extra_flops, theirs[i].extra_flops)
          << lanes << ", " << i;
    }
    EXPECT_EQ(many->result.frontier_chosen, one->result.frontier_chosen);
    EXPECT_FALSE(many->result.frontier_replay_missed);
    EXPECT_EQ(MovedPastTheTop(*many->module), MovedPastTheTop(*one->module));
    EXPECT_EQ(EntrySize(*many->module), EntrySize(*one->module));
    // The lanes' searches are counted, and a plan two aims make is judged
    // once, as on one planner.
    EXPECT_GT(many->result.judgements, 0);
    EXPECT_EQ(many->result.judgements, one->result.judgements);
    EXPECT_EQ(many->result.plans_tried, one->result.plans_tried);
  }
  // Four aims, each its own plan.
  EXPECT_EQ(one->result.frontier.size(), 4);
}

// kFan planned for a budget two values under its start, with the frontier
// of "another schedule" given as `other`: one point, made by no recipe.
// What the callback saw of the module is put in `seen_entry_size`.
absl::StatusOr<Planned> PlanFanWithAnotherSchedule(FrontierPoint other,
                                                   int64_t* seen_entry_size) {
  TF_ASSIGN_OR_RETURN(Planned lowest, PlanHlo(kFan, AsLowAsPossible()));
  const int64_t start = lowest.result.initial_peak_bytes;
  PlannerConfig config = FanTwoValuesUnder(start);
  const int64_t budget = config.target_bytes;
  FrontierSearch search;
  search.aims = {budget};
  search.choose = [budget, start](absl::Span<const FrontierPoint> points) {
    return ChooseFromFrontier(points, budget, start, FrontierRules{});
  };
  search.other_schedules = [other, seen_entry_size](
                               const HloModule& module,
                               absl::Span<const FrontierPoint> points)
      -> absl::StatusOr<std::vector<std::shared_ptr<const KnownFrontier>>> {
    *seen_entry_size = EntrySize(module);
    auto known = std::make_shared<KnownFrontier>();
    known->points = {other};
    known->recipes = {std::nullopt};
    return std::vector<std::shared_ptr<const KnownFrontier>>{known};
  };
  config.frontier = search;
  return PlanHlo(kFan, config);
}

// Another schedule's point, within the budget for fewer FLOPs, is the
// answer: it is handed back to be made on that schedule, nothing is applied
// here, and a frontier that spans schedules is not kept for a later compile.
TEST(FrontierPointsTest, APointOnAnotherScheduleIsChosenAndLeftToTheCaller) {
  absl::StatusOr<Planned> lowest = PlanHlo(kFan, AsLowAsPossible());
  ASSERT_TRUE(lowest.ok()) << lowest.status();
  const int64_t start = lowest->result.initial_peak_bytes;
  absl::StatusOr<std::unique_ptr<HloModule>> given = ParseAndVerify(kFan);
  ASSERT_TRUE(given.ok()) << given.status();
  const int64_t given_size = EntrySize(**given);
  int64_t seen = 0;
  const FrontierPoint cheap{start - 3 * kSquareValueBytes,
                            start - 3 * kSquareValueBytes, /*extra_flops=*/1};
  absl::StatusOr<Planned> planned = PlanFanWithAnotherSchedule(cheap, &seen);
  ASSERT_TRUE(planned.ok()) << planned.status();
  const PlannerResult& result = planned->result;
  EXPECT_EQ(seen, given_size);  // the module as given, no plan in it
  ASSERT_TRUE(result.frontier_chosen.has_value());
  const FrontierPoint& chosen = result.frontier[*result.frontier_chosen];
  EXPECT_EQ(chosen.schedule, 1);
  EXPECT_EQ(chosen.peak_bytes, cheap.peak_bytes);
  ASSERT_NE(result.frontier_chosen_elsewhere, nullptr);
  ASSERT_EQ(result.frontier_chosen_elsewhere->points.size(), 1);
  EXPECT_EQ(result.frontier_chosen_elsewhere->points[0].schedule, 0);
  EXPECT_EQ(EntrySize(*planned->module), given_size);
  EXPECT_EQ(result.frontier_made, nullptr);
}

// Another schedule's point that no budget prefers (as high, dearer) joins
// the frontier, and the search's own plan is applied.
TEST(FrontierPointsTest, ADominatedPointOnAnotherScheduleLeavesThePlanApplied) {
  absl::StatusOr<Planned> lowest = PlanHlo(kFan, AsLowAsPossible());
  ASSERT_TRUE(lowest.ok()) << lowest.status();
  const int64_t start = lowest->result.initial_peak_bytes;
  int64_t seen = 0;
  const FrontierPoint dear{start - kSquareValueBytes, start - kSquareValueBytes,
                           /*extra_flops=*/1e12};
  absl::StatusOr<Planned> planned = PlanFanWithAnotherSchedule(dear, &seen);
  ASSERT_TRUE(planned.ok()) << planned.status();
  const PlannerResult& result = planned->result;
  ASSERT_TRUE(result.frontier_chosen.has_value());
  EXPECT_EQ(result.frontier[*result.frontier_chosen].schedule, 0);
  EXPECT_EQ(result.frontier_chosen_elsewhere, nullptr);
  EXPECT_GT(result.recomputed, 0);
  EXPECT_EQ(result.frontier.back().schedule, 1);
  EXPECT_EQ(result.frontier_made, nullptr);
}

// kFan's frontier at two aims, one value and four values under its start;
// `fills` plans between neighbours whose extra FLOPs differ by more than
// one FLOP.
absl::StatusOr<Planned> PlanFanWithWideStep(int fills) {
  return PlanFanAtAims({1, 4}, [fills](FrontierSearch& search) {
    search.wide_step_flops = 1;
    search.max_step_fills = fills;
  });
}

// The aims' plans recompute one value and three (the lowest aim lies past
// what any plan reaches): a budget two values under the start pays for
// three. Plans between them, sweeps at the lower plan's peak under caps
// between their moves' FLOPs, recompute two once the cap leaves room for
// the move the sweep makes first that does not lower the peak: the budget
// gets that plan, made again from its recipe.
TEST(FrontierPointsTest, APlanBetweenTwoFarApartIsMadeAndChosen) {
  absl::StatusOr<Planned> aims_only = PlanFanWithWideStep(0);
  ASSERT_TRUE(aims_only.ok()) << aims_only.status();
  EXPECT_EQ(aims_only->result.frontier.size(), 2);
  EXPECT_EQ(MovedPastTheTop(*aims_only->module), 3);

  absl::StatusOr<Planned> filled = PlanFanWithWideStep(4);
  ASSERT_TRUE(filled.ok()) << filled.status();
  const PlannerResult& result = filled->result;
  ASSERT_GT(result.frontier.size(), 2);
  ASSERT_TRUE(result.frontier_chosen.has_value());
  const FrontierPoint& chosen = result.frontier[*result.frontier_chosen];
  EXPECT_GE(chosen.cap_flops, 0);
  EXPECT_LE(chosen.extra_flops, chosen.cap_flops);
  EXPECT_LT(chosen.extra_flops, result.frontier[1].extra_flops);
  EXPECT_EQ(MovedPastTheTop(*filled->module), 2);
  EXPECT_FALSE(result.frontier_replay_missed);
  // Each plan between is a plan of its own, and none is dominated by the
  // two the aims made.
  for (const FrontierPoint& point : result.frontier) {
    if (point.cap_flops < 0) continue;
    EXPECT_FALSE(point.peak_bytes >= result.frontier[0].peak_bytes &&
                 point.extra_flops >= result.frontier[0].extra_flops);
    EXPECT_FALSE(point.peak_bytes >= result.frontier[1].peak_bytes &&
                 point.extra_flops >= result.frontier[1].extra_flops);
  }
}

}  // namespace
}  // namespace remat
}  // namespace xla
