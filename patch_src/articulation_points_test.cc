#include "xla/service/remat/articulation_points.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/remat_test_util.h"

namespace xla {
namespace remat {
namespace {

std::set<std::string> PointNames(absl::string_view hlo) {
  auto module = ParseAndVerify(hlo);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  std::set<std::string> names;
  for (const HloInstruction* point :
       ArticulationPoints(*(*module)->entry_computation())) {
    names.insert(std::string(point->name()));
  }
  return names;
}

TEST(ArticulationPointsTest, EveryInnerNodeOfAChainIsOne) {
  EXPECT_EQ(PointNames(R"(
HloModule chain
ENTRY e {
  p = f32[8] parameter(0)
  a = f32[8] exponential(p)
  b = f32[8] negate(a)
  ROOT c = f32[8] exponential(b)
})"),
            (std::set<std::string>{"a", "b"}));
}

TEST(ArticulationPointsTest, ACycleHasNoneInside) {
  // p, x, y and s form a cycle in the undirected graph: removing any one of
  // them leaves the others connected; only s joins the tail r to it.
  EXPECT_EQ(PointNames(R"(
HloModule diamond
ENTRY e {
  p = f32[8] parameter(0)
  x = f32[8] exponential(p)
  y = f32[8] negate(p)
  s = f32[8] add(x, y)
  ROOT r = f32[8] exponential(s)
})"),
            (std::set<std::string>{"s"}));
}

TEST(ArticulationPointsTest, ASingleInstructionHasNone) {
  EXPECT_TRUE(PointNames(R"(
HloModule single
ENTRY e {
  ROOT p = f32[8] parameter(0)
})")
                  .empty());
}

TEST(ArticulationPointsTest, BranchesThatNeverMeetSplitAtTheirOperand) {
  // Two chains from p that never join (b2 is dead): p separates them.
  EXPECT_EQ(PointNames(R"(
HloModule fork
ENTRY e {
  p = f32[8] parameter(0)
  a = f32[8] exponential(p)
  b = f32[8] negate(p)
  b2 = f32[8] exponential(b)
  ROOT a2 = f32[8] negate(a)
})"),
            (std::set<std::string>{"p", "a", "b"}));
}

TEST(ArticulationPointsTest, BranchesThatMeetAgainFormACycle) {
  EXPECT_TRUE(PointNames(R"(
HloModule join
ENTRY e {
  p = f32[8] parameter(0)
  a = f32[8] exponential(p)
  b = f32[8] negate(p)
  ROOT t = (f32[8], f32[8]) tuple(a, b)
})")
                  .empty());
}

}  // namespace
}  // namespace remat
}  // namespace xla
