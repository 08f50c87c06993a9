#include "xla/service/remat/optimal_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "xla/service/remat/milp_solver.h"
#include "xla/service/remat/remat_graph.h"

namespace xla {
namespace remat {
namespace {

// A graph built node by node in schedule order; a node's buffer lives until
// its last reader, or to the end for parameters and outputs.
class GraphBuilder {
 public:
  int Add(std::string name, int64_t bytes, double flops, std::vector<int> reads,
          bool live_to_end = false) {
    RematGraphNode node;
    node.name = std::move(name);
    node.opcode = reads.empty() ? "parameter" : "fusion";
    node.position = static_cast<int>(graph_.nodes.size());
    node.flops = flops;
    node.recomputable = !reads.empty();
    node.candidate = node.recomputable;
    node.buffers.push_back(
        RematGraphBuffer{bytes, node.position, node.position, live_to_end});
    node.reads = reads;
    for (int read : reads) {
      graph_.nodes[read].buffers[0].last_position = node.position;
    }
    graph_.nodes.push_back(std::move(node));
    graph_.positions = static_cast<int>(graph_.nodes.size());
    return graph_.positions - 1;
  }
  const RematGraph& graph() const { return graph_; }

 private:
  RematGraph graph_;
};

struct Solved {
  MilpStatus status;
  double extra_flops = 0;
  int64_t peak = 0;
  std::vector<Recomputation> plan;
};

Solved Solve(const RematGraph& graph, int depth, int64_t budget) {
  const OptimalModel model(graph, depth,
                           std::vector<bool>(graph.nodes.size(), true));
  absl::StatusOr<MilpSolution> solution =
      SolveMilp(model.MinFlopsProblem(budget), MilpSolveOptions());
  EXPECT_TRUE(solution.ok()) << solution.status();
  Solved out{solution->status};
  if (!solution->values.empty()) {
    out.extra_flops = model.ExtraFlops(solution->values);
    out.peak = model.Peak(solution->values);
    out.plan = model.Plan(solution->values);
  }
  return out;
}

// x -> a -> b -> c; d reads a and c (a skip connection, as in a U-net).
// Keeping everything peaks at c's stage: x + a + b + c = 301. Under 250 the
// only way is to drop a across b and c and run it again (5 FLOPs) for d.
// Returns a.
int AddSkipConnection(GraphBuilder& g) {
  const int x = g.Add("x", 1, 0, {}, /*live_to_end=*/true);
  const int a = g.Add("a", 100, 5, {x});
  const int b = g.Add("b", 100, 7, {a});
  const int c = g.Add("c", 100, 7, {b});
  g.Add("d", 1, 1, {a, c}, /*live_to_end=*/true);
  return a;
}

TEST(OptimalModelTest, SkipConnectionRecomputesTheSkippedValue) {
  GraphBuilder g;
  const int a = AddSkipConnection(g);
  const OptimalModel model(g.graph(), 2, std::vector<bool>(5, true));
  EXPECT_EQ(model.KeepAllPeak(), 301);

  const Solved solved = Solve(g.graph(), 2, 250);
  ASSERT_EQ(solved.status, MilpStatus::kOptimal);
  EXPECT_DOUBLE_EQ(solved.extra_flops, 5);
  EXPECT_LE(solved.peak, 250);
  ASSERT_EQ(solved.plan.size(), 1);
  EXPECT_EQ(solved.plan[0].node, a);
  EXPECT_EQ(solved.plan[0].stage, 4);
}

// The same, with x written over at c's stage (a weight the step updates in
// place): a clone of a at d's stage would read the new x, so the model has
// no plan under 250; readable at d, it has the same one as before.
TEST(OptimalModelTest, NoCloneRunsAfterWhatItReadsIsWrittenOver) {
  GraphBuilder g;
  const int a = AddSkipConnection(g);
  RematGraph graph = g.graph();
  graph.nodes[a].readable_until = 3;  // c
  EXPECT_EQ(Solve(graph, 2, 250).status, MilpStatus::kInfeasible);
  graph.nodes[a].readable_until = 4;  // d
  const Solved solved = Solve(graph, 2, 250);
  ASSERT_EQ(solved.status, MilpStatus::kOptimal);
  EXPECT_DOUBLE_EQ(solved.extra_flops, 5);
}

// x -> a -> b -> big -> g, and h reads g and b. Holding b (or a) across g's
// stage passes the budget; rebuilding b for h needs a, which is gone too:
// only a chain of two recomputations meets it.
TEST(OptimalModelTest, ChainNeedsDepthTwo) {
  GraphBuilder g;
  const int x = g.Add("x", 1, 0, {}, /*live_to_end=*/true);
  const int a = g.Add("a", 50, 1, {x});
  const int b = g.Add("b", 50, 1, {a});
  const int big = g.Add("big", 140, 1, {b});
  const int gg = g.Add("g", 60, 1, {big});
  g.Add("h", 1, 1, {gg, b}, /*live_to_end=*/true);
  const OptimalModel model(g.graph(), 2, std::vector<bool>(6, true));
  EXPECT_EQ(model.KeepAllPeak(), 251);

  EXPECT_EQ(Solve(g.graph(), 1, 250).status, MilpStatus::kInfeasible);
  const Solved solved = Solve(g.graph(), 2, 250);
  ASSERT_EQ(solved.status, MilpStatus::kOptimal);
  EXPECT_DOUBLE_EQ(solved.extra_flops, 2);
  EXPECT_LE(solved.peak, 250);
  ASSERT_EQ(solved.plan.size(), 2);
  EXPECT_EQ(solved.plan[0].node, a);  // operands first
  EXPECT_EQ(solved.plan[1].node, b);
  EXPECT_EQ(solved.plan[0].stage, 5);
  EXPECT_EQ(solved.plan[1].stage, 5);
}

// Two branches off one value, joined (a diamond): the cheaper branch is the
// one recomputed.
TEST(OptimalModelTest, DiamondRecomputesTheCheaperBranch) {
  GraphBuilder g;
  const int x = g.Add("x", 1, 0, {}, /*live_to_end=*/true);
  const int cheap = g.Add("cheap", 100, 2, {x});
  const int dear = g.Add("dear", 100, 9, {x});
  const int n = g.Add("n", 100, 1, {g.Add("m", 100, 1, {cheap, dear})});
  g.Add("out", 1, 1, {n, cheap, dear}, /*live_to_end=*/true);
  // Keeping everything: x + cheap + dear + m + n = 401 at n's stage.
  const Solved solved = Solve(g.graph(), 2, 320);
  ASSERT_EQ(solved.status, MilpStatus::kOptimal);
  EXPECT_DOUBLE_EQ(solved.extra_flops, 2);
  ASSERT_EQ(solved.plan.size(), 1);
  EXPECT_EQ(solved.plan[0].node, cheap);
}

TEST(OptimalModelTest, BelowWhatAnyPlanReachesIsInfeasible) {
  GraphBuilder g;
  const int x = g.Add("x", 1, 0, {}, /*live_to_end=*/true);
  g.Add("y", 100, 1, {x}, /*live_to_end=*/true);
  EXPECT_EQ(Solve(g.graph(), 2, 50).status, MilpStatus::kInfeasible);
}

TEST(OptimalModelTest, AComputeCapBelowTheOptimumIsInfeasible) {
  GraphBuilder g;
  AddSkipConnection(g);
  const OptimalModel model(g.graph(), 2, std::vector<bool>(5, true));
  absl::StatusOr<MilpSolution> capped = SolveMilp(
      model.MinFlopsProblem(250, /*max_extra_flops=*/4), MilpSolveOptions());
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->status, MilpStatus::kInfeasible);
}

}  // namespace
}  // namespace remat
}  // namespace xla
