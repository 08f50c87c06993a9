#include "xla/service/remat/value_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/remat_test_util.h"

namespace xla {
namespace remat {
namespace {

constexpr char kValueTableModule[] = R"(
HloModule table

ENTRY e {
  p0 = f32[16] parameter(0)
  a = f32[16] exponential(p0)
  bitcast_a = f32[4,4] bitcast(a)
  b = f32[16] negate(a)
  ROOT r = f32[16] add(a, b)
}
)";

class ValueTableTest : public RematHloTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ParseModule(kValueTableModule));
    table_.Reset(/*slot_count=*/5);
  }
  // A value of `name` defined at `slot`, read through `readers`.
  int AddValue(const char* name, int slot,
               std::vector<HloInstruction*> readers) {
    Value value;
    value.instruction = value.producer = Named(name);
    value.origin = Named(name);
    value.def = slot;
    return table_.Add(std::move(value), readers);
  }

  ValueTable table_;
};

TEST_F(ValueTableTest, AValueIsFoundThroughEveryReaderAndItsSlot) {
  const int a = AddValue("a", 1, {Named("a"), Named("bitcast_a")});
  EXPECT_EQ(table_.IndexOf(Named("a")), a);
  EXPECT_EQ(table_.IndexOf(Named("bitcast_a")), a);
  EXPECT_EQ(table_.IndexOf(Named("b")), -1);
  ASSERT_EQ(table_.DefinedAt(1).size(), 1);
  EXPECT_EQ(table_.DefinedAt(1)[0], a);
  ASSERT_EQ(table_.VersionsOf(Named("a")).size(), 1);
}

TEST_F(ValueTableTest, KeepingNoUseKillsTheValueAndRestoreRevivesIt) {
  const int a = AddValue("a", 1, {Named("a")});
  const Use late{Named("r"), 0, Named("a"), 4};
  table_.AddUse(a, late);
  EXPECT_FALSE(table_.KeepUses(a, {late}));
  EXPECT_FALSE(table_[a].dead);
  EXPECT_TRUE(table_.KeepUses(a, {}));
  EXPECT_TRUE(table_[a].dead);
  table_.Restore(a, {late}, /*dead=*/false);
  EXPECT_FALSE(table_[a].dead);
  ASSERT_EQ(table_[a].uses.size(), 1);
  EXPECT_EQ(table_[a].uses[0].slot, 4);
}

TEST_F(ValueTableTest, ARetiredCloneIsNoLongerAVersion) {
  const int a = AddValue("a", 1, {Named("a")});
  Value clone;
  clone.instruction = clone.producer = Named("b");
  clone.origin = Named("a");
  clone.def = 3;
  const int copy = table_.Add(std::move(clone), {Named("b")});
  table_.AddUse(copy, {Named("r"), 1, Named("b"), 4});
  EXPECT_EQ(table_.VersionsOf(Named("a")).size(), 2);
  table_.Retire(copy);
  EXPECT_TRUE(table_[copy].dead);
  EXPECT_TRUE(table_[copy].uses.empty());
  ASSERT_EQ(table_.VersionsOf(Named("a")).size(), 1);
  EXPECT_EQ(table_.VersionsOf(Named("a"))[0], a);
}

TEST_F(ValueTableTest, UsesByRemovedInstructionsGo) {
  const int a = AddValue("a", 1, {Named("a")});
  table_.AddUse(a, {Named("b"), 0, Named("a"), 3});
  table_.AddUse(a, {Named("r"), 0, Named("a"), 4});
  table_.RemoveUsesBy(a, {Named("b")});
  ASSERT_EQ(table_[a].uses.size(), 1);
  EXPECT_EQ(table_[a].uses[0].user, Named("r"));
}

TEST_F(ValueTableTest, ActiveValuesArePrunedWhenDeadOrEnded) {
  const int a = AddValue("a", 1, {Named("a")});
  const int b = AddValue("b", 3, {Named("b")});
  table_.Activate(a);
  table_.Activate(b);
  table_.Activate(a);  // once only
  ASSERT_EQ(table_.active().size(), 2);
  table_.PruneActive([&](const Value& value) { return value.def == 1; });
  ASSERT_EQ(table_.active().size(), 1);
  EXPECT_EQ(table_.active()[0], b);
  EXPECT_FALSE(table_[a].active);
  table_.KeepUses(b, {});  // dead: never active again
  table_.DeactivateAll();
  table_.Activate(b);
  EXPECT_TRUE(table_.active().empty());
}

}  // namespace
}  // namespace remat
}  // namespace xla
