#include "xla/service/remat/frontier_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/tsl/platform/env.h"

namespace xla {
namespace remat {
namespace {

constexpr absl::string_view kModule = R"(
HloModule cached

ENTRY main {
  p = f32[64] parameter(0)
  e = f32[64] exponential(p)
  ROOT a = f32[64] add(e, p)
}
)";

KnownFrontier Sample() {
  KnownFrontier frontier;
  frontier.capped = true;
  // FLOPs that no short decimal spells: they must read back exactly.
  frontier.points.push_back({900, 880, 1.0 / 3.0, true});
  frontier.points.push_back({500, 640, 163429744.0, true});
  // A plan between two others: the cap it was made under.
  frontier.points.back().cap_flops = 2.0 / 9.0;
  frontier.points.push_back({250, 1000, 0, false});
  // `path`'s single recomputations at the floor aim.
  frontier.points.push_back({250, 600, 5.0, true});
  frontier.points.back().chains = false;
  PlanRecipe recipe;
  recipe.chains = false;
  recipe.cap = 1.0 / 7.0;
  recipe.tracker_peak = 777;
  recipe.extra_flops = 2.0 / 3.0;
  recipe.steps.push_back({PlanStepKind::kPlan, 500, true, -1, false});
  recipe.steps.push_back(
      {PlanStepKind::kTakeBackUnneeded, 480, false, -1, true});
  recipe.steps.push_back(
      {PlanStepKind::kTakeBackOutOfLine, 0, true, 0.5, false});
  frontier.recipes = {std::nullopt, recipe, std::nullopt, std::nullopt};
  return frontier;
}

// The file's text names every field, numbers with every digit: two
// frontiers with the same text are the same.
void ExpectSame(const KnownFrontier& a, const KnownFrontier& b) {
  EXPECT_EQ(FrontierFileText(a, "id"), FrontierFileText(b, "id"));
}

TEST(FrontierFileTest, ReadsBackWhatItWrote) {
  const std::string text = FrontierFileText(Sample(), "id");
  absl::StatusOr<std::optional<KnownFrontier>> read =
      ParseFrontierFile(text, "id", "f");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  ExpectSame(**read, Sample());
  // Exactly, not to the digits printed.
  EXPECT_EQ((*read)->points[0].extra_flops, 1.0 / 3.0);
  EXPECT_EQ((*read)->points[0].cap_flops, -1);
  EXPECT_EQ((*read)->points[1].cap_flops, 2.0 / 9.0);
  EXPECT_TRUE((*read)->points[1].chains);
  EXPECT_FALSE((*read)->points[3].chains);
  ASSERT_TRUE((*read)->recipes[1].has_value());
  EXPECT_EQ((*read)->recipes[1]->cap, 1.0 / 7.0);
  EXPECT_EQ((*read)->recipes[1]->steps.size(), 3);
  EXPECT_EQ((*read)->recipes[1]->steps[1].kind,
            PlanStepKind::kTakeBackUnneeded);
  EXPECT_TRUE((*read)->recipes[1]->steps[1].recompute_only);
}

TEST(FrontierFileTest, AnotherIdentityIsAMiss) {
  absl::StatusOr<std::optional<KnownFrontier>> read = ParseFrontierFile(
      FrontierFileText(Sample(), "engine=a"), "engine=b", "f");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
}

TEST(FrontierFileTest, AMalformedFileNamesItsLine) {
  std::string text = FrontierFileText(Sample(), "id");
  text.replace(text.find("point 500"), 9, "point five");
  absl::StatusOr<std::optional<KnownFrontier>> read =
      ParseFrontierFile(text, "id", "dir/m.frontier");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("dir/m.frontier:5:"),
            std::string::npos)
      << read.status();
  // Cut short: a point may be missing, so it is no frontier.
  const std::string whole = FrontierFileText(Sample(), "id");
  read = ParseFrontierFile(whole.substr(0, whole.find("end")), "id", "f");
  EXPECT_FALSE(read.ok());
  read = ParseFrontierFile("something else\n", "id", "f");
  EXPECT_FALSE(read.ok());
  // A step belongs to the recipe before it, which belongs to a point.
  std::string orphan = FrontierFileText(Sample(), "id");
  orphan.insert(orphan.find("point 900"), "step plan 1 1 -1 0\n");
  EXPECT_FALSE(ParseFrontierFile(orphan, "id", "f").ok());
}

TEST(FrontierIdentityTest, NamesWhatThePointsDependOnNotTheBudget) {
  RematOptions options;
  options.engine_revision = "r1";
  const std::string identity = FrontierIdentity(options);
  RematOptions budget = options;
  budget.memory_limit_bytes = 12345;
  budget.memory_limit_fraction = 0.33;
  budget.planning_threads = 3;
  EXPECT_EQ(FrontierIdentity(budget), identity);
  RematOptions algorithm = options;
  algorithm.algorithm = RematAlgorithm::kPath;
  EXPECT_NE(FrontierIdentity(algorithm), identity);
  RematOptions cap = options;
  cap.max_extra_flops_fraction = 0.1;
  EXPECT_NE(FrontierIdentity(cap), identity);
  RematOptions engine = options;
  engine.engine_revision = "r2";
  EXPECT_NE(FrontierIdentity(engine), identity);
  RematOptions figure = options;
  figure.memory_figure = {MemoryFigure::kBufferAssignment, 256};
  EXPECT_NE(FrontierIdentity(figure), identity);
}

TEST(FrontierCacheTest, StoresAndLoadsPerModule) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(kModule);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/frontier_cache_test");
  RematOptions options;
  options.engine_revision = "test";
  const FrontierCache cache(dir, **module, options);
  tsl::Env::Default()->DeleteFile(cache.path()).IgnoreError();
  absl::StatusOr<std::optional<KnownFrontier>> read = cache.Load();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
  ASSERT_TRUE(cache.Store(Sample()).ok());
  read = cache.Load();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  ExpectSame(**read, Sample());
  // Another algorithm keeps its own file.
  RematOptions path = options;
  path.algorithm = RematAlgorithm::kPath;
  const FrontierCache other(dir, **module, path);
  EXPECT_NE(other.path(), cache.path());
  // A folder that cannot be made is an error to report, not a crash.
  const FrontierCache nowhere(absl::StrCat(cache.path(), "/below_a_file"),
                              **module, options);
  EXPECT_FALSE(nowhere.Store(Sample()).ok());
}

}  // namespace
}  // namespace remat
}  // namespace xla
