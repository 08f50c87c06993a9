// Test tools for the planner's searches: an HLO text planned by
// RunRematPlanner, and kFan, whose plans are told apart by how many of its
// values they recompute.
#ifndef XLA_SERVICE_REMAT_REMAT_PLANNER_TEST_UTIL_H_
#define XLA_SERVICE_REMAT_REMAT_PLANNER_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/remat_planner.h"
#include "xla/service/remat/remat_test_util.h"
#include "xla/service/remat/size_function.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

// Four values of the parameter, each read early and again only at the end:
// each recomputed there lowers the peak by one value.
inline constexpr absl::string_view kFan = R"(
HloModule fan, is_scheduled=true
ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  a = f32[256,256]{1,0} exponential(p)
  b = f32[256,256]{1,0} tanh(p)
  c = f32[256,256]{1,0} negate(p)
  d = f32[256,256]{1,0} sine(p)
  x = f32[256,256]{1,0} add(a, b)
  y = f32[256,256]{1,0} add(c, d)
  e = f32[256,256]{1,0} add(x, y)
  f = f32[256,256]{1,0} multiply(e, e)
  g = f32[256,256]{1,0} add(f, d)
  h = f32[256,256]{1,0} add(g, c)
  i = f32[256,256]{1,0} add(h, b)
  ROOT r = f32[256,256]{1,0} add(i, a)
})";

// How many of kFan's four values a plan recomputed after its top, `f`.
inline int64_t MovedPastTheTop(const HloModule& planned) {
  const HloComputation* entry = planned.entry_computation();
  const auto& order = planned.schedule().sequence(entry).instructions();
  auto top = std::find_if(order.begin(), order.end(),
                          [](const auto* i) { return i->name() == "f"; });
  return std::distance(top, order.end()) - 5;  // f, g, h, i, r
}

// A module, its costs and the planner's result on it.
struct Planned {
  std::unique_ptr<HloModule> module;
  PlannerResult result;
};

inline absl::StatusOr<Planned> PlanHlo(absl::string_view hlo,
                                       const PlannerConfig& config) {
  Planned planned;
  TF_ASSIGN_OR_RETURN(planned.module, ParseAndVerify(hlo));
  TF_ASSIGN_OR_RETURN(std::unique_ptr<RematCostAnalysis> costs,
                      AnalyzeCosts(*planned.module, PlainBytes));
  TF_ASSIGN_OR_RETURN(
      planned.result,
      RunRematPlanner(planned.module.get(), config, PlainBytes, *costs));
  return planned;
}

inline PlannerConfig AsLowAsPossible() {
  PlannerConfig config;
  config.target_bytes = 1;
  return config;
}

inline int64_t EntrySize(const HloModule& module) {
  return module.entry_computation()->instruction_count();
}

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_PLANNER_TEST_UTIL_H_
