#include "xla/service/remat/remat_pass.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/testlib/pattern_matcher_gmock.h"
#include "xla/service/pattern_matcher.h"
#include "xla/service/remat/remat_decision.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/remat_report.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

namespace m = ::xla::match;

// Every value of the hand-written modules below is f32[256,256].

// The custom-call's value is live across the peak but may not be
// recomputed (an opaque kernel): only `a` can move.
constexpr absl::string_view kCustomCall = R"(
HloModule custom_call, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  cc = f32[256,256]{1,0} custom-call(p), custom_call_target="my_kernel"
  a = f32[256,256]{1,0} exponential(p)
  b = f32[256,256]{1,0} tanh(a)
  c = f32[256,256]{1,0} exponential(b)
  d = f32[256,256]{1,0} add(c, cc)
  ROOT r = f32[256,256]{1,0} add(d, a)
})";

// An RNG draws anew each time it runs: never recomputed.
constexpr absl::string_view kSideEffect = R"(
HloModule side_effect, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  noise = f32[256,256]{1,0} rng(zero, one), distribution=rng_uniform
  a = f32[256,256]{1,0} exponential(p)
  b = f32[256,256]{1,0} tanh(a)
  c = f32[256,256]{1,0} exponential(b)
  d = f32[256,256]{1,0} add(c, b)
  e = f32[256,256]{1,0} add(d, noise)
  ROOT r = f32[256,256]{1,0} add(e, a)
})";

// `w` is donated to output {0} (`new_w`). `wt`, a copy of `w` read early and
// late, would read the updated weights if recomputed after `new_w`.
constexpr absl::string_view kDonated = R"(
HloModule donated, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  w = f32[256,256]{1,0} parameter(0)
  x = f32[256,256]{1,0} parameter(1)
  wt = f32[256,256]{1,0} copy(w)
  a = f32[256,256]{1,0} add(x, wt)
  b = f32[256,256]{1,0} tanh(a)
  c = f32[256,256]{1,0} exponential(b)
  new_w = f32[256,256]{1,0} add(w, c)
  d = f32[256,256]{1,0} tanh(new_w)
  e = f32[256,256]{1,0} dot(d, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  f = f32[256,256]{1,0} add(e, d)
  late = f32[256,256]{1,0} add(f, wt)
  ROOT t = (f32[256,256]{1,0}, f32[256,256]{1,0}) tuple(new_w, late)
})";

RematOptions Options(int64_t budget_bytes,
                     RematAlgorithm algorithm = RematAlgorithm::kStandard) {
  RematOptions options;
  options.enabled = true;
  options.memory_limit_bytes = budget_bytes;
  options.algorithm = algorithm;
  // Modules of a few instructions: one recomputation is a large share of
  // their FLOPs. The cap has tests of its own.
  options.max_extra_flops_fraction = -1;
  return options;
}

struct PassRun {
  std::unique_ptr<HloModule> module;
  RematReport report;
};

absl::StatusOr<PassRun> RunPass(absl::string_view hlo,
                                const RematOptions& options) {
  PassRun run;
  TF_ASSIGN_OR_RETURN(run.module, ParseAndVerify(hlo));
  TF_ASSIGN_OR_RETURN(run.report,
                      RunRemat(run.module.get(), options, PlainBytes));
  return run;
}

// The clones the pass made of `value` (named value.remat...).
int ClonesOf(const HloModule& module, absl::string_view value) {
  int clones = 0;
  for (const HloInstruction* instruction :
       module.entry_computation()->instructions()) {
    if (absl::StartsWith(instruction->name(), absl::StrCat(value, ".remat"))) {
      ++clones;
    }
  }
  return clones;
}

int CountOpcode(const HloModule& module, HloOpcode opcode) {
  int count = 0;
  for (const HloComputation* computation : module.computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (instruction->opcode() == opcode) ++count;
    }
  }
  return count;
}

// The report's phases, comma-separated, in the order they ran.
std::string PhaseOrder(const RematReport& report) {
  std::string order;
  for (const auto& [phase, seconds] : report.phase_seconds) {
    absl::StrAppend(&order, order.empty() ? "" : ",", phase);
  }
  return order;
}

bool Decided(const RematReport& report, absl::string_view value) {
  for (const RematDecision& decision : report.decisions) {
    if (decision.value == value) return true;
  }
  return false;
}

TEST(RematPassTest, ChainRecomputesTheCheapEarlyValueNextToItsLateUse) {
  absl::StatusOr<PassRun> run = RunPass(kChain, Options(1));
  ASSERT_TRUE(run.ok()) << run.status();
  const HloInstruction* clone = nullptr;
  // r = add(g, a) now reads a clone of `a` rebuilt from the parameter.
  EXPECT_THAT(run->module->entry_computation()->root_instruction(),
              GmockMatch(m::Add(m::Op().WithName("g"),
                                m::Exp(&clone, m::Parameter(0)))));
  ASSERT_NE(clone, nullptr);
  EXPECT_TRUE(absl::StartsWith(clone->name(), "a.remat"));
  // Pinned after its trigger point: a later scheduler may not hoist it back
  // next to `a`.
  EXPECT_FALSE(clone->control_predecessors().empty());
  // Five values at the simulated peak before, four after; three at the floor.
  EXPECT_EQ(run->report.heap_sim_before_bytes, 5 * kSquareValueBytes);
  EXPECT_EQ(run->report.heap_sim_after_bytes, 4 * kSquareValueBytes);
  EXPECT_EQ(run->report.floor_bytes, 3 * kSquareValueBytes);
  EXPECT_EQ(run->report.recomputed, 1);
  EXPECT_FALSE(run->report.budget_met);  // 1 byte is below anything reachable
}

TEST(RematPassTest, ABudgetAboveThePeakChangesNothing) {
  absl::StatusOr<PassRun> run = RunPass(kChain, Options(int64_t{1} << 30));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->report.budget_met);
  EXPECT_EQ(run->report.instructions_added, 0);
  EXPECT_EQ(run->report.heap_sim_after_bytes,
            run->report.heap_sim_before_bytes);
  EXPECT_EQ(run->report.scheduler_chosen, "unchanged");
  EXPECT_TRUE(absl::StrContains(run->report.note, "nothing done"));
  EXPECT_EQ(run->module->entry_computation()->instruction_count(), 9);
}

TEST(RematPassTest, AReachableBudgetIsMet) {
  absl::StatusOr<PassRun> run = RunPass(kChain, Options(4 * kSquareValueBytes));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->report.budget_met);
  EXPECT_LE(run->report.heap_sim_after_bytes, 4 * kSquareValueBytes);
  EXPECT_EQ(run->report.allocation_after_bytes,
            run->report.heap_sim_after_bytes);  // CPU: the simulator's figure
}

TEST(RematPassTest, ARelativeBudgetBecomesBytesOfThePeakBefore) {
  RematOptions options = Options(0);
  options.memory_limit_fraction = 0.5;
  absl::StatusOr<PassRun> run = RunPass(kChain, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->report.budget_bytes, 5 * kSquareValueBytes / 2);
  EXPECT_TRUE(absl::StrContains(run->report.note, "budget 0.5x of 1310720"));
}

// "As low as it gets" is the plan aimed at the floor, not at zero: aimed at
// zero the sweep lowers every position from the first.
TEST(RematPassTest, WithoutABudgetThePlanAimsAtTheFloor) {
  absl::StatusOr<PassRun> unbounded = RunPass(kChain, Options(0));
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  const RematReport& report = unbounded->report;
  EXPECT_TRUE(report.budget_met);
  EXPECT_TRUE(absl::StrContains(report.note,
                                absl::StrCat("no budget: aimed at the floor, ",
                                             report.floor_bytes, " bytes")));
  absl::StatusOr<PassRun> at_floor =
      RunPass(kChain, Options(report.floor_bytes));
  ASSERT_TRUE(at_floor.ok()) << at_floor.status();
  EXPECT_EQ(report.heap_sim_after_bytes, at_floor->report.heap_sim_after_bytes);
  EXPECT_EQ(report.recomputed, at_floor->report.recomputed);
  EXPECT_LT(report.heap_sim_after_bytes, report.heap_sim_before_bytes);
}

TEST(RematPassTest, TheTrackerCountsOneValueMoreThanTheSimulatorOnAChain) {
  // HeapSimulator lets an elementwise op write over a dying operand; the
  // tracker does not model that reuse, so on the chain (one reuse at the
  // peak) it is exactly one value above, never below.
  absl::StatusOr<PassRun> run = RunPass(kChain, Options(int64_t{1} << 30));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->report.peak_before_bytes - run->report.heap_sim_before_bytes,
            kSquareValueBytes);
}

TEST(RematPassTest, StandardLeavesAChainThatOnlyPaysWhole) {
  absl::StatusOr<PassRun> run = RunPass(kPathChain, Options(1));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->report.recomputed, 0);
  EXPECT_EQ(run->report.heap_sim_after_bytes, 4 * kSquareValueBytes);
}

TEST(RematPassTest, PathRecomputesTheWholeChainFromTheParameter) {
  absl::StatusOr<PassRun> run =
      RunPass(kPathChain, Options(1, RematAlgorithm::kPath));
  ASSERT_TRUE(run.ok()) << run.status();
  // r = add(t5, exp(negate(exp(p)))): the chain a -> b -> c, cloned.
  EXPECT_THAT(run->module->entry_computation()->root_instruction(),
              GmockMatch(m::Add(m::Op().WithName("t5"),
                                m::Exp(m::Negate(m::Exp(m::Parameter(0))))
                                    .WithPredicate([](const HloInstruction* c) {
                                      return absl::StartsWith(c->name(),
                                                              "c.remat");
                                    }))));
  EXPECT_EQ(run->report.recomputed, 3);
  // Down to the floor: three values.
  EXPECT_EQ(run->report.heap_sim_after_bytes, 3 * kSquareValueBytes);
  EXPECT_EQ(run->report.floor_bytes, 3 * kSquareValueBytes);
  EXPECT_TRUE(absl::StrContains(run->report.note, "articulation points"));
}

// `optimal` keeps whichever of the MILP's plans and `path`'s the simulator
// finds best: where `path` meets the budget, met with no more FLOPs; where
// it misses, no higher.
TEST(RematPassTest, OptimalIsNeverWorseThanPath) {
  for (const absl::string_view hlo : {kChain, kPathChain}) {
    for (const int64_t budget :
         {3 * kSquareValueBytes, 4 * kSquareValueBytes}) {
      absl::StatusOr<PassRun> path =
          RunPass(hlo, Options(budget, RematAlgorithm::kPath));
      absl::StatusOr<PassRun> optimal =
          RunPass(hlo, Options(budget, RematAlgorithm::kOptimal));
      ASSERT_TRUE(path.ok()) << path.status();
      ASSERT_TRUE(optimal.ok()) << optimal.status();
      const RematReport& mine = optimal->report;
      if (absl::StrContains(mine.note, "nothing done")) continue;
      ASSERT_TRUE(mine.optimal.has_value()) << mine.note;
      EXPECT_NE(mine.optimal->outcome, OptimalOutcome::kNotRun);
      EXPECT_TRUE(absl::StrContains(mine.note, "optimal: "));
      if (path->report.budget_met) {
        // At the budget, fewer FLOPs is better, whatever the bytes below it.
        EXPECT_TRUE(mine.budget_met);
        EXPECT_LE(mine.flops_after, path->report.flops_after);
      } else {
        EXPECT_LE(mine.heap_sim_after_bytes, path->report.heap_sim_after_bytes);
      }
    }
  }
}

// Where only a recomputation next to the late use meets the budget, the
// solver finds the cheapest one and the plan applied is the solver's.
TEST(RematPassTest, OptimalAppliesTheSolversPlanThroughThePlannersEdits) {
  absl::StatusOr<PassRun> run =
      RunPass(kChain, Options(4 * kSquareValueBytes, RematAlgorithm::kOptimal));
  ASSERT_TRUE(run.ok()) << run.status();
  const RematReport& report = run->report;
  ASSERT_TRUE(report.optimal.has_value());
  EXPECT_TRUE(report.budget_met);
  EXPECT_EQ(report.optimal->status, "optimal");
  EXPECT_EQ(report.optimal->solver_peak, report.heap_sim_after_bytes)
      << OptimalOutcomeName(report.optimal->outcome);
  // The model counts what the tracker does (one value more than the
  // simulator on this chain).
  EXPECT_LE(report.optimal->model_peak, report.optimal->model_budget);
}

TEST(RematPassTest, ACustomCallIsNeverRecomputed) {
  absl::StatusOr<PassRun> run = RunPass(kCustomCall, Options(1));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(CountOpcode(*run->module, HloOpcode::kCustomCall), 1);
  EXPECT_FALSE(Decided(run->report, "cc"));
  EXPECT_TRUE(Decided(run->report, "a"));
}

TEST(RematPassTest, ARandomNumberGeneratorIsNeverRecomputed) {
  absl::StatusOr<PassRun> run = RunPass(kSideEffect, Options(1));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(CountOpcode(*run->module, HloOpcode::kRng), 1);
  EXPECT_FALSE(Decided(run->report, "noise"));
  EXPECT_LT(run->report.heap_sim_after_bytes,
            run->report.heap_sim_before_bytes);
}

TEST(RematPassTest, AReadOfADonatedParameterStaysBeforeTheUpdate) {
  absl::StatusOr<PassRun> run = RunPass(kDonated, Options(1));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(ClonesOf(*run->module, "wt"), 0);
  // Without the alias the same copy is the one worth recomputing: the alias
  // is what keeps it in place.
  const std::string free = absl::StrReplaceAll(
      kDonated, {{", input_output_alias={ {0}: (0, {}, may-alias) }", ""}});
  absl::StatusOr<PassRun> unaliased = RunPass(free, Options(1));
  ASSERT_TRUE(unaliased.ok()) << unaliased.status();
  EXPECT_EQ(ClonesOf(*unaliased->module, "wt"), 1);
}

TEST(RematPassTest, ALiveOutValueIsNotRecomputed) {
  absl::StatusOr<PassRun> run = RunPass(kTupleOutput, Options(1));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_FALSE(Decided(run->report, "b"));
  EXPECT_EQ(ClonesOf(*run->module, "b"), 0);
}

TEST(RematPassTest, AWhileLoopIsNeverRecomputedButItsOperandsMayBe) {
  absl::StatusOr<PassRun> run = RunPass(kWhileLoop, Options(1));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(CountOpcode(*run->module, HloOpcode::kWhile), 1);
  // c = add(res, a) reads a clone of `a` after the loop.
  EXPECT_THAT(FindInstruction(*run->module, "c"),
              GmockMatch(m::Add(m::GetTupleElement(m::Op().WithName("loop"), 1),
                                m::Exp(m::Parameter(0)))));
}

TEST(RematPassTest, TheSmallNodeLimitKeepsSmallValues) {
  absl::StatusOr<PassRun> without = RunPass(kSmallNode, Options(1));
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(ClonesOf(*without->module, "small"), 1);
  RematOptions options = Options(1);
  options.small_node_limit_mib = 1;  // 64 KiB is below it
  absl::StatusOr<PassRun> with = RunPass(kSmallNode, options);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->report.recomputed, 0);
  EXPECT_EQ(ClonesOf(*with->module, "small"), 0);
}

TEST(RematPassTest, AnUnscheduledModuleIsScheduledFirst) {
  const std::string unscheduled =
      absl::StrReplaceAll(kChain, {{", is_scheduled=true", ""}});
  absl::StatusOr<PassRun> run = RunPass(unscheduled, Options(1));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->module->has_schedule());
  EXPECT_TRUE(run->report.rescheduled);
  EXPECT_EQ(ClonesOf(*run->module, "a"), 1);
}

TEST(RematPassTest, TheGivenSchedulerNeedsASchedule) {
  const std::string unscheduled =
      absl::StrReplaceAll(kChain, {{", is_scheduled=true", ""}});
  RematOptions options = Options(1);
  options.scheduler = RematScheduler::kGiven;
  absl::StatusOr<PassRun> run = RunPass(unscheduled, options);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(run.status().message(), "has none"));
}

TEST(RematPassTest, TheGivenScheduleIsKeptWhenAskedFor) {
  RematOptions options = Options(1);
  options.scheduler = RematScheduler::kGiven;
  absl::StatusOr<PassRun> run = RunPass(kChain, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->report.scheduler_chosen, "given");
  EXPECT_FALSE(run->report.rescheduled);
  EXPECT_EQ(run->report.heap_sim_after_bytes, 4 * kSquareValueBytes);
}

TEST(RematPassTest, DumpsWithoutAFolderAreRefusedWithTheFix) {
  RematOptions options = Options(1);
  options.dump_dot = true;
  absl::StatusOr<PassRun> run = RunPass(kChain, options);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(run.status().message(), "--xla_dump_to"));
}

TEST(RematPassTest, ADisabledPassReportsSoAndTouchesNothing) {
  RematOptions options = Options(1);
  options.enabled = false;
  absl::StatusOr<PassRun> run = RunPass(kChain, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->report.note, "pass disabled");
  EXPECT_EQ(run->module->entry_computation()->instruction_count(), 9);
}

TEST(RematPassTest, CompressUnderPlainBytesSaysThereIsNothingCompact) {
  absl::StatusOr<PassRun> run =
      RunPass(kChain, Options(1, RematAlgorithm::kCompress));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->report.compressed, 0);
  EXPECT_TRUE(absl::StrContains(run->report.note,
                                "no value has a smaller compact form"));
  EXPECT_EQ(run->report.heap_sim_after_bytes,
            run->report.heap_sim_before_bytes);
}

TEST(RematPassTest, TheXlaBaselineRunsOnTheSameModule) {
  absl::StatusOr<PassRun> run =
      RunPass(kChain, Options(1, RematAlgorithm::kXla));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->report.algorithm, "xla");
  EXPECT_TRUE(absl::StrContains(run->report.note, "HloRematerialization"));
  EXPECT_EQ(PhaseOrder(run->report), "costs,schedule,xla,verify");
}

TEST(RematPassTest, ThePassTimeIsTheSumOfItsPhasesInTheOrderRun) {
  absl::StatusOr<PassRun> run = RunPass(kChain, Options(1));
  ASSERT_TRUE(run.ok()) << run.status();
  double sum = 0;
  for (const auto& [phase, seconds] : run->report.phase_seconds) {
    EXPECT_GE(seconds, 0) << phase;
    sum += seconds;
  }
  EXPECT_DOUBLE_EQ(sum, run->report.pass_seconds);
  EXPECT_EQ(PhaseOrder(run->report),
            "costs,schedule,loop_stacks,plan,judge,callees,verify");
}

TEST(RematPassTest, NothingDoneIsTimedAsACheck) {
  absl::StatusOr<PassRun> run = RunPass(kChain, Options(int64_t{1} << 30));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(PhaseOrder(run->report), "costs,check");
}

TEST(RematPassTest, TheHloPassSaysWhetherItChangedTheModule) {
  for (const auto& [budget, changed] :
       {std::pair<int64_t, bool>{int64_t{1} << 30, false}, {1, true}}) {
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseAndVerify(kChain);
    ASSERT_TRUE(module.ok()) << module.status();
    RematerializationPass pass(Options(budget), PlainBytes);
    absl::StatusOr<bool> result = pass.Run(module->get());
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(*result, changed) << "budget " << budget;
    EXPECT_EQ(pass.last_report().budget_bytes, budget);
  }
}

// A weight gradient (`dw`, kLateGradient) the scheduler left behind the rest
// of the step: on the GPU's figure the pass runs it right after what it
// reads. Values of 1 MiB or less are no candidates here, so that the new
// order is the only change the pass makes.
TEST(RematPassTest, ANewOrderAloneIsAChange) {
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      ParseAndVerify(GradientModule(kLateGradient));
  ASSERT_TRUE(module.ok()) << module.status();
  RematOptions options = Options(1);
  options.scheduler = RematScheduler::kGiven;
  options.memory_figure.figure = MemoryFigure::kBufferAssignment;
  options.small_node_limit_mib = 1;
  RematerializationPass pass(options, PlainBytes);
  absl::StatusOr<bool> changed = pass.Run(module->get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_GT(pass.last_report().hoisted, 0);
  EXPECT_EQ(pass.last_report().instructions_added, 0);
  EXPECT_TRUE(*changed);
}

class EverySchedulerTest : public ::testing::TestWithParam<RematScheduler> {};

TEST_P(EverySchedulerTest, RunsAndLowersTheChainsPeak) {
  RematOptions options = Options(1);
  options.scheduler = GetParam();
  absl::StatusOr<PassRun> run = RunPass(kChain, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_LT(run->report.heap_sim_after_bytes,
            run->report.heap_sim_before_bytes);
  EXPECT_TRUE(run->module->schedule().Verify().ok());
}

INSTANTIATE_TEST_SUITE_P(Schedulers, EverySchedulerTest,
                         ::testing::Values(RematScheduler::kDefault,
                                           RematScheduler::kPostorder,
                                           RematScheduler::kDfs,
                                           RematScheduler::kList));

}  // namespace
}  // namespace remat
}  // namespace xla
