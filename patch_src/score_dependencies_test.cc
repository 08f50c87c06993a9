#include "xla/service/remat/score_dependencies.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/planner_edits.h"
#include "xla/service/remat/planner_scoring.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/remat_planner.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {
namespace {

// `a`, `b` and `c` are live across `m2` and read again late: each can be
// recomputed there. `c` reads `a`; `b` shares nothing with `a`.
constexpr char kScoreDependenciesModule[] = R"(
HloModule scores, is_scheduled=true

ENTRY e {
  p0 = f32[1024] parameter(0)
  p1 = f32[1024] parameter(1)
  a = f32[1024] exponential(p0)
  b = f32[1024] sine(p1)
  c = f32[1024] cosine(a)
  m1 = f32[1024] multiply(c, c)
  m2 = f32[1024] add(m1, m1)
  m3 = f32[1024] tanh(m2)
  t1 = f32[1024] add(m3, a)
  t2 = f32[1024] add(t1, b)
  t3 = f32[1024] add(t2, c)
  ROOT r = f32[1024] negate(t3)
}
)";

class ScoreDependenciesTest : public RematHloTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ParseModule(kScoreDependenciesModule));
    absl::StatusOr<std::unique_ptr<RematCostAnalysis>> costs =
        AnalyzeCosts(*module_, PlainBytes);
    ASSERT_TRUE(costs.ok()) << costs.status();
    costs_ = *std::move(costs);
    state_ = std::make_unique<PlannerState>(
        module_.get(), module_->entry_computation(), PlannerConfig(),
        PlainBytes, *costs_);
    ASSERT_TRUE(state_->Init().ok());
    state_->scores().resize(state_->values().size());
    slot_ = Slot("m2");
    state_->set_sweep_slot(slot_);
  }

  int Slot(absl::string_view name) const {
    for (int slot = 0; slot < state_->slot_count(); ++slot) {
      if (state_->sequence()[slot]->name() == name) return slot;
    }
    return -1;
  }
  int ValueOf(absl::string_view name) const {
    return state_->values().IndexOf(Named(name));
  }
  // Scores value `name` at m2 afresh and files what it read.
  int Scored(absl::string_view name) {
    const int index = ValueOf(name);
    EXPECT_TRUE(Score(*state_, index, slot_, state_->scores()[index]));
    RegisterScoreReads(*state_, index);
    return index;
  }

  std::unique_ptr<RematCostAnalysis> costs_;
  std::unique_ptr<PlannerState> state_;
  int slot_ = -1;
};

TEST_F(ScoreDependenciesTest, ScoresHoldUntilSomethingTheyReadChanges) {
  const int a = Scored("a");
  ASSERT_FALSE(state_->scores()[a].candidates.empty());
  // Nothing changed: the cached score is reused.
  EXPECT_FALSE(Score(*state_, a, slot_, state_->scores()[a]));
}

// Scored again past its horizon, a value that reads what it read is not
// filed again: its readers' lists would grow by a repeat at every scoring.
TEST_F(ScoreDependenciesTest, AScoreThatReadsTheSameIsFiledOnce) {
  const int a = Scored("a");
  const int c = Scored("c");  // filed after `a` in a list they share
  ScoreCache& cache = state_->scores()[a];
  const std::vector<int>& c_reads = state_->scores()[c].reads.buffers;
  auto shared =
      std::find_if(cache.reads.buffers.begin(), cache.reads.buffers.end(),
                   [&](int b) { return absl::c_linear_search(c_reads, b); });
  ASSERT_NE(shared, cache.reads.buffers.end());
  const int buffer = *shared;
  const size_t filed = state_->score_readers().of_buffer[buffer].size();
  const int horizon = cache.until;
  cache.until = slot_;  // past its horizon: scored afresh
  EXPECT_TRUE(Score(*state_, a, slot_, cache));
  EXPECT_TRUE(cache.reads_filed);
  RegisterScoreReads(*state_, a);
  EXPECT_EQ(state_->score_readers().of_buffer[buffer].size(), filed);
  EXPECT_EQ(cache.until, horizon);
  // Made stale, its lists were emptied: filed again.
  MarkAllScoresStale(*state_);
  EXPECT_TRUE(Score(*state_, a, slot_, cache));
  EXPECT_FALSE(cache.reads_filed);
  RegisterScoreReads(*state_, a);
  EXPECT_EQ(state_->score_readers().of_buffer[buffer].size(), 1);
}

TEST_F(ScoreDependenciesTest, ARefusalLastsAsLongAsTheScore) {
  const int a = Scored("a");
  ScoreCache& cache = state_->scores()[a];
  cache.refused_in = 7;
  // The same score: the move it names is the same, and so is the refusal.
  EXPECT_FALSE(Score(*state_, a, slot_, cache));
  EXPECT_EQ(cache.refused_in, 7);
  // Scored again, the move may differ: it has to be tried again.
  MarkAllScoresStale(*state_);
  EXPECT_TRUE(Score(*state_, a, slot_, cache));
  EXPECT_EQ(cache.refused_in, -1);
}

TEST_F(ScoreDependenciesTest,
       AMoveMakesStaleOnlyTheScoresThatReadWhatItChanged) {
  const int a = Scored("a");
  const int b = Scored("b");
  const int c = Scored("c");
  ASSERT_FALSE(state_->scores()[a].candidates.empty());
  const Candidate move = state_->scores()[a].candidates.front();
  ASSERT_TRUE(ApplyMove(*state_, move, slot_).ok());
  MarkScoresStale(*state_, state_->moves()[0]);
  state_->scores().resize(state_->values().size());

  EXPECT_FALSE(state_->scores()[a].valid) << "the moved value";
  EXPECT_FALSE(state_->scores()[c].valid) << "reads a, which has a new version";
  EXPECT_TRUE(state_->scores()[b].valid) << "shares nothing with a";
  EXPECT_FALSE(Score(*state_, b, slot_, state_->scores()[b]));
}

TEST_F(ScoreDependenciesTest, TakingAMoveBackMakesTheSameScoresStale) {
  const int a = Scored("a");
  const Candidate move = state_->scores()[a].candidates.front();
  ASSERT_TRUE(ApplyMove(*state_, move, slot_).ok());
  MarkScoresStale(*state_, state_->moves()[0]);
  state_->scores().resize(state_->values().size());
  const int b = Scored("b");
  const int c = Scored("c");
  Scored("a");

  ASSERT_TRUE(RevertMove(*state_, /*move_index=*/0).ok());
  MarkScoresStale(*state_, state_->moves()[0]);
  EXPECT_FALSE(state_->scores()[a].valid);
  EXPECT_FALSE(state_->scores()[c].valid);
  EXPECT_TRUE(state_->scores()[b].valid);
}

TEST_F(ScoreDependenciesTest, EveryScoreGoesStaleWhenThePlanIsTakenBackWhole) {
  const int a = Scored("a");
  const int b = Scored("b");
  MarkAllScoresStale(*state_);
  EXPECT_FALSE(state_->scores()[a].valid);
  EXPECT_FALSE(state_->scores()[b].valid);
  // No reader is left filed (the lists keep their storage for the next).
  for (const std::vector<int>& list : state_->score_readers().of_buffer) {
    EXPECT_TRUE(list.empty());
  }
  for (const std::vector<int>& list : state_->score_readers().of_value) {
    EXPECT_TRUE(list.empty());
  }
}

TEST_F(ScoreDependenciesTest, AScoreIsFiledOnceForABufferItReadsTwice) {
  const int a = Scored("a");
  ScoreReads& reads = state_->scores()[a].reads;
  const int buffer = reads.buffers.front();
  reads.buffers.push_back(buffer);
  RegisterScoreReads(*state_, a);
  const std::vector<int>& list = state_->score_readers().of_buffer[buffer];
  EXPECT_EQ(std::count(list.begin(), list.end(), a), 1);
}

}  // namespace
}  // namespace remat
}  // namespace xla
