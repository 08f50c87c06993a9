#include "xla/service/remat/sweep_replay.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/planner.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {
namespace {

TEST(ValueRenamingTest, ValuesTheSweepFoundKeepTheirIndices) {
  ValueRenaming renaming(/*first_added_value=*/10);
  Candidate candidate;
  candidate.value = 3;
  candidate.chain = {1, 2, 3};
  ASSERT_TRUE(renaming.Rename(candidate));
  EXPECT_EQ(candidate.value, 3);
  EXPECT_EQ(candidate.chain, (std::vector<int>{1, 2, 3}));
}

TEST(ValueRenamingTest, ValuesTheSweepAddedAreNamedAsTheReplayAddsThem) {
  ValueRenaming renaming(/*first_added_value=*/10);
  // The sweep added 12 and 15 (13 and 14 were a refused move's); the
  // replay, on a table grown by other sweeps, adds 40 and 41.
  ASSERT_TRUE(renaming.Add({12, 15}, {40, 41}));
  Candidate candidate;
  candidate.value = 15;
  candidate.chain = {12, 15};
  candidate.reads_placed = {12};
  candidate.companions = {4};
  ASSERT_TRUE(renaming.Rename(candidate));
  EXPECT_EQ(candidate.value, 41);
  EXPECT_EQ(candidate.chain, (std::vector<int>{40, 41}));
  EXPECT_EQ(candidate.reads_placed, (std::vector<int>{40}));
  EXPECT_EQ(candidate.companions, (std::vector<int>{4}));
}

TEST(ValueRenamingTest, AValueTheReplayHasNotAddedIsNotRenamed) {
  ValueRenaming renaming(/*first_added_value=*/10);
  ASSERT_TRUE(renaming.Add({12}, {40}));
  Candidate candidate;
  candidate.value = 2;
  candidate.companions = {13};
  EXPECT_FALSE(renaming.Rename(candidate));
}

TEST(ValueRenamingTest, AMoveThatAddsAnotherNumberOfValuesIsNotTheSame) {
  ValueRenaming renaming(/*first_added_value=*/10);
  EXPECT_FALSE(renaming.Add({12, 13}, {40}));
}

// A planner on its own copy of an HLO text, as a lane of the frontier
// search plans on its own copy of the module.
struct PlannerOn {
  std::unique_ptr<HloModule> module;
  std::unique_ptr<RematCostAnalysis> costs;
  std::unique_ptr<Planner> planner;
};

PlannerConfig ConfigWith(bool chains) {
  PlannerConfig config;
  config.target_bytes = 1;
  config.chains = chains;
  return config;
}

absl::StatusOr<PlannerOn> MakePlanner(absl::string_view hlo, bool chains,
                                      bool replay_sweeps) {
  PlannerOn on;
  TF_ASSIGN_OR_RETURN(on.module, ParseAndVerify(hlo));
  TF_ASSIGN_OR_RETURN(on.costs, AnalyzeCosts(*on.module, PlainBytes));
  on.planner =
      std::make_unique<Planner>(on.module.get(), on.module->entry_computation(),
                                ConfigWith(chains), PlainBytes, *on.costs);
  TF_RETURN_IF_ERROR(on.planner->Init());
  on.planner->set_replay_sweeps(replay_sweeps);
  return on;
}

// What a plan is, names apart: the judge's signature, the tracker's peak,
// the FLOPs.
struct PlanSeen {
  std::string signature;
  int64_t peak;
  double flops;
  bool operator==(const PlanSeen& other) const {
    return signature == other.signature && peak == other.peak &&
           flops == other.flops;
  }
};

PlanSeen Seen(const Planner& planner) {
  return {planner.Signature(planner.FinalOrderInHand()), planner.tracker_peak(),
          planner.kept_flops()};
}

// The sweeps' moves: kChain's and kLateUse's single recomputations, and
// chains (`path`, which takes back what the chains hold without), which
// only kPathChain needs.
struct Case {
  absl::string_view hlo;
  bool chains;
};

class SweepReplayTest : public ::testing::TestWithParam<Case> {};

TEST_P(SweepReplayTest, ASweepMadeAgainIsTheSamePlanWithoutScoring) {
  absl::StatusOr<PlannerOn> on =
      MakePlanner(GetParam().hlo, GetParam().chains, /*replay_sweeps=*/true);
  ASSERT_TRUE(on.ok()) << on.status();
  Planner& planner = *on->planner;
  ASSERT_TRUE(planner.Plan(1).ok());
  ASSERT_TRUE(planner.has_moves());
  const PlanSeen swept = Seen(planner);
  ASSERT_TRUE(planner.RevertAll().ok());
  ASSERT_TRUE(planner.Plan(1).ok());
  EXPECT_EQ(planner.counts().sweeps_replayed, 1);
  EXPECT_EQ(Seen(planner), swept);
  EXPECT_EQ(planner.counts().plans_tried, 2);
}

// A sweep that continues from a replayed plan (a second sweep at the same
// aim) starts from what the first sweep left, scores and active values
// included, as it would without replays.
TEST_P(SweepReplayTest, ASweepFromAReplayedPlanPlansAsWithoutReplays) {
  absl::StatusOr<PlannerOn> replaying =
      MakePlanner(GetParam().hlo, GetParam().chains, /*replay_sweeps=*/true);
  absl::StatusOr<PlannerOn> sweeping =
      MakePlanner(GetParam().hlo, GetParam().chains, /*replay_sweeps=*/false);
  ASSERT_TRUE(replaying.ok()) << replaying.status();
  ASSERT_TRUE(sweeping.ok()) << sweeping.status();
  Planner& replayer = *replaying->planner;
  ASSERT_TRUE(replayer.Plan(1).ok());
  ASSERT_TRUE(replayer.RevertAll().ok());
  ASSERT_TRUE(replayer.Plan(1).ok());
  ASSERT_TRUE(replayer.TakeBackUnneeded(1, /*recompute_only=*/false).ok());
  ASSERT_TRUE(replayer.Plan(1).ok());
  EXPECT_EQ(replayer.counts().sweeps_replayed, 1);
  EXPECT_EQ(replayer.counts().sweeps_rescored, 1);
  EXPECT_EQ(replayer.counts().plans_tried, 3);

  Planner& sweeper = *sweeping->planner;
  ASSERT_TRUE(sweeper.Plan(1).ok());
  ASSERT_TRUE(sweeper.TakeBackUnneeded(1, /*recompute_only=*/false).ok());
  ASSERT_TRUE(sweeper.Plan(1).ok());
  EXPECT_EQ(sweeper.counts().sweeps_replayed, 0);
  EXPECT_EQ(Seen(replayer), Seen(sweeper));
}

// The frontier search makes its chosen plan again on the pass's planner
// from a recipe a lane made on its copy of the module.
TEST_P(SweepReplayTest, ARecipeReplaysItsSweepOnAnotherPlanner) {
  absl::StatusOr<PlannerOn> lane =
      MakePlanner(GetParam().hlo, GetParam().chains, /*replay_sweeps=*/true);
  absl::StatusOr<PlannerOn> pass =
      MakePlanner(GetParam().hlo, GetParam().chains, /*replay_sweeps=*/true);
  ASSERT_TRUE(lane.ok()) << lane.status();
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_TRUE(lane->planner->Plan(1).ok());
  const PlanRecipe recipe = lane->planner->Recipe();
  ASSERT_NE(recipe.first_sweep, nullptr);
  absl::StatusOr<bool> replayed =
      pass->planner->Replay(recipe, ConfigWith(GetParam().chains));
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_TRUE(*replayed);
  EXPECT_EQ(pass->planner->counts().sweeps_replayed, 1);
  EXPECT_EQ(Seen(*pass->planner), Seen(*lane->planner));
}

INSTANTIATE_TEST_SUITE_P(Modules, SweepReplayTest,
                         ::testing::Values(Case{kChain, false},
                                           Case{kChain, true},
                                           Case{kPathChain, true},
                                           Case{kLateUse, false}));

// A record is of one module and its copies. Offered for a module with fewer
// slots than its moves name (kChain's late uses run past kSmallNode's
// end), it is not applied, and the plan is swept instead.
TEST(SweepReplayOfAnotherModuleTest, IsSweptInstead) {
  absl::StatusOr<PlannerOn> chain =
      MakePlanner(kChain, /*chains=*/false, /*replay_sweeps=*/true);
  absl::StatusOr<PlannerOn> other =
      MakePlanner(kSmallNode, /*chains=*/false, /*replay_sweeps=*/true);
  ASSERT_TRUE(chain.ok()) << chain.status();
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(chain->planner->Plan(1).ok());
  const PlanRecipe recipe = chain->planner->Recipe();
  ASSERT_NE(recipe.first_sweep, nullptr);
  ASSERT_FALSE(recipe.first_sweep->moves.empty());
  absl::StatusOr<bool> replayed =
      other->planner->Replay(recipe, ConfigWith(false));
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(other->planner->counts().sweeps_replayed, 0);
  // Not the recipe's plan: the replay says so and leaves no move in hand.
  EXPECT_FALSE(*replayed);
  EXPECT_FALSE(other->planner->has_moves());
}

}  // namespace
}  // namespace remat
}  // namespace xla
