// Test tools for the planner's units: a planner state built on an HLO text.
#ifndef XLA_SERVICE_REMAT_PLANNER_TEST_UTIL_H_
#define XLA_SERVICE_REMAT_PLANNER_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/planner_scoring.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// A planner state on an HLO text, every value defined before position `at`
// active.
class PlannerStateTest : public RematHloTest {
 protected:
  void Build(absl::string_view hlo, bool chains, int at,
             bool siblings = false) {
    ASSERT_NO_FATAL_FAILURE(ParseModule(hlo));
    absl::StatusOr<std::unique_ptr<RematCostAnalysis>> costs =
        AnalyzeCosts(*module_, PlainBytes);
    ASSERT_TRUE(costs.ok()) << costs.status();
    costs_ = std::move(*costs);
    PlannerConfig config;
    config.target_bytes = 1;
    config.chains = chains;
    config.siblings = siblings;
    state_ = std::make_unique<PlannerState>(module_.get(),
                                            module_->entry_computation(),
                                            config, PlainBytes, *costs_);
    ASSERT_TRUE(state_->Init().ok());
    for (int slot = 0; slot < at; ++slot) {
      for (int index : state_->values().DefinedAt(slot)) {
        state_->values().Activate(index);
      }
    }
  }

  int Index(absl::string_view name) const {
    return state_->values().IndexOf(Named(name));
  }

  // The recomputation of value `index` scored at `at`; fails the test if
  // there is none.
  void ScoreRecompute(int index, int at, bool chains, Candidate& out) {
    int horizon = state_->slot_count();
    ScoreReads reads;
    ASSERT_TRUE(
        EvaluateRecompute(*state_, index, at, chains, out, horizon, reads));
  }

  std::unique_ptr<RematCostAnalysis> costs_;
  std::unique_ptr<PlannerState> state_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLANNER_TEST_UTIL_H_
