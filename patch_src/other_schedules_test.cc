#include "xla/service/remat/other_schedules.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_planner_test_util.h"
#include "xla/service/remat/remat_schedule.h"
#include "xla/service/remat/remat_test_util.h"

namespace xla {
namespace remat {
namespace {

std::vector<std::string> EntryOrder(const HloModule& module) {
  std::vector<std::string> names;
  for (const HloInstruction* instruction :
       module.schedule().sequence(module.entry_computation()).instructions()) {
    names.emplace_back(instruction->name());
  }
  return names;
}

// A schedule named on one module orders a copy the same, whatever order the
// copy had: the other schedules' plans are made on copies and applied to
// the module.
TEST(OtherSchedulesTest, ANamedScheduleOrdersACopyTheSame) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(kFan);
  ASSERT_TRUE(module.ok()) << module.status();
  const NamedSchedule named =
      NameSchedule(**module, (*module)->schedule(), "given");
  std::unique_ptr<HloModule> copy = (*module)->Clone("");
  absl::StatusOr<std::vector<MadeSchedule>> postorder =
      MakeSchedules(*copy, {RematScheduler::kPostorder}, PlainBytes);
  ASSERT_TRUE(postorder.ok()) << postorder.status();
  ASSERT_TRUE(copy->set_schedule((*postorder)[0].schedule).ok());
  ASSERT_NE(EntryOrder(*copy), EntryOrder(**module));
  const absl::Status applied = ApplyNamedSchedule(named, copy.get());
  ASSERT_TRUE(applied.ok()) << applied;
  EXPECT_EQ(EntryOrder(*copy), EntryOrder(**module));
}

// The default scheduler hands back every schedule it made, so that the
// other schedules' searches start from the schedules of the module before
// any plan (ScheduleToSearch); the one it keeps is the lowest of them.
TEST(OtherSchedulesTest, TheSchedulesMadeBeforeAnyPlanAreHandedBack) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(kFan);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::vector<std::string> given_order = EntryOrder(**module);
  absl::StatusOr<std::vector<MadeSchedule>> made = MakeSchedules(
      **module, {RematScheduler::kList, RematScheduler::kPostorder},
      PlainBytes);
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_EQ(made->size(), 2);
  EXPECT_EQ((*made)[1].scheduler, RematScheduler::kPostorder);
  EXPECT_EQ(EntryOrder(**module), given_order);  // the module keeps its own
  absl::StatusOr<ScheduleChoice> choice =
      RescheduleModule(module->get(), RematScheduler::kDefault, PlainBytes);
  ASSERT_TRUE(choice.ok()) << choice.status();
  ASSERT_EQ(choice->made.size(), 3);
  for (const MadeSchedule& schedule : choice->made) {
    EXPECT_GE(schedule.heap_sim_peak_bytes, choice->heap_sim_peak_bytes);
    // The search takes this peak as its start: it is HeapSimulatorPeak's.
    std::unique_ptr<HloModule> copy = (*module)->Clone("");
    ASSERT_TRUE(
        ApplyNamedSchedule(NameSchedule(**module, schedule.schedule, "made"),
                           copy.get())
            .ok());
    absl::StatusOr<int64_t> peak = HeapSimulatorPeak(*copy, PlainBytes);
    ASSERT_TRUE(peak.ok()) << peak.status();
    EXPECT_EQ(*peak, schedule.heap_sim_peak_bytes);
  }
  absl::StatusOr<int64_t> kept = HeapSimulatorPeak(**module, PlainBytes);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, choice->heap_sim_peak_bytes);
}

// A schedule that names an instruction the module lacks is refused, and
// says which; a computation the module lacks (one nothing calls, which a
// copy leaves out) is passed over.
TEST(OtherSchedulesTest, AScheduleNamingWhatTheModuleLacksIsRefused) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(kFan);
  ASSERT_TRUE(module.ok()) << module.status();
  NamedSchedule named = NameSchedule(**module, (*module)->schedule(), "list");
  named.sequences[(*module)->entry_computation()->name()][0] = "nowhere";
  named.sequences["uncalled"] = {"p"};
  const absl::Status applied = ApplyNamedSchedule(named, module->get());
  EXPECT_FALSE(applied.ok());
  EXPECT_NE(applied.message().find("nowhere"), std::string::npos) << applied;
  named.sequences[(*module)->entry_computation()->name()][0] = "p";
  const absl::Status passed_over = ApplyNamedSchedule(named, module->get());
  EXPECT_TRUE(passed_over.ok()) << passed_over;
}

// Other schedules are searched where the lowest usable plan (or, with none,
// the start) lies above 1.25 times the floor, never without a floor.
TEST(OtherSchedulesTest, SearchedWhereTheLowestPlanStaysFarAboveTheFloor) {
  const FrontierRules rules;
  const int64_t start = 1000;
  const std::vector<FrontierPoint> high = {{900, 900, 1.0}, {800, 800, 2.0}};
  const std::vector<FrontierPoint> low = {{900, 900, 1.0}, {700, 700, 2.0}};
  EXPECT_TRUE(StopsFarAboveTheFloor(high, start, 600, rules));  // 800 > 750
  EXPECT_FALSE(StopsFarAboveTheFloor(low, start, 600, rules));  // 700 <= 750
  EXPECT_TRUE(StopsFarAboveTheFloor({}, start, 600, rules));    // the start
  EXPECT_FALSE(StopsFarAboveTheFloor(high, start, 0, rules));   // no floor
}

// Each other schedule's frontier is searched on a copy, which it orders as
// that schedule does; the module itself is left as it was.
TEST(OtherSchedulesTest, EachOtherSchedulesFrontierIsSearchedOnACopy) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(kFan);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::vector<std::string> given_order = EntryOrder(**module);
  absl::StatusOr<std::vector<MadeSchedule>> postorder =
      MakeSchedules(**module, {RematScheduler::kPostorder}, PlainBytes);
  ASSERT_TRUE(postorder.ok()) << postorder.status();
  OtherSchedulesOptions options;
  options.schedules.push_back(
      {NameSchedule(**module, (*module)->schedule(), "given"), std::nullopt});
  options.schedules.push_back(
      {NameSchedule(**module, (*postorder)[0].schedule, "postorder"),
       (*postorder)[0].heap_sim_peak_bytes});
  options.config.keep_plan =
      [](const HloModule& planned,
         const AliasInfo* alias_info) -> absl::StatusOr<PlanVerdict> {
    absl::StatusOr<int64_t> peak =
        HeapSimulatorPeak(planned, PlainBytes, alias_info);
    if (!peak.ok()) return peak.status();
    return PlanVerdict{/*keep=*/true, *peak, ""};
  };
  options.config.frontier = FrontierSearch{};
  absl::StatusOr<int64_t> start = HeapSimulatorPeak(**module, PlainBytes);
  ASSERT_TRUE(start.ok()) << start.status();
  options.reference_bytes = *start;
  options.floor_bytes = *start / 4;
  OtherSchedules others(options, PlainBytes);
  absl::StatusOr<std::vector<std::shared_ptr<const KnownFrontier>>> searched =
      others.Search(**module);
  ASSERT_TRUE(searched.ok()) << searched.status();
  ASSERT_EQ(searched->size(), 2);
  EXPECT_EQ(others.schedule(1).scheduler, "given");
  EXPECT_EQ(others.schedule(2).scheduler, "postorder");
  EXPECT_EQ(others.schedule(1).sequences.at("main"), given_order);
  EXPECT_NE(others.schedule(2).sequences.at("main"), given_order);
  for (const auto& frontier : *searched) {
    EXPECT_FALSE(frontier->points.empty());
  }
  EXPECT_FALSE(others.aims(1).empty());
  EXPECT_EQ(EntryOrder(**module), given_order);
  EXPECT_EQ(EntrySize(**module), 13);  // kFan as parsed
  EXPECT_GT(others.plans_tried(), 0);
}

}  // namespace
}  // namespace remat
}  // namespace xla
