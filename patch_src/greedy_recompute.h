// The `standard` algorithm: greedy recomputation along the schedule.
//
// Sweeps the entry computation's schedule once. At each position whose live
// bytes exceed the target it picks, among the values live across that
// position, the one that frees the most bytes per unit of recompute cost,
// clones its producer right before the value's first later use and points
// the later uses at the clone, until the position is within the target or no
// candidate frees memory there. Each candidate costs O(uses + operands) to
// score and the profile is a segment tree, so a pass is
// O(n log n + over-budget positions x live candidates).
#ifndef XLA_SERVICE_REMAT_GREEDY_RECOMPUTE_H_
#define XLA_SERVICE_REMAT_GREEDY_RECOMPUTE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/remat/remat_decision.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

struct GreedyRecomputeConfig {
  // Live bytes to reach at every position; 0 means as low as possible.
  int64_t target_bytes = 0;
  // Values of this many bytes or fewer are never candidates.
  int64_t min_candidate_bytes = 0;
  // A recomputed value may itself be recomputed this many times.
  int max_generations = 3;
};

struct GreedyRecomputeResult {
  int recomputed = 0;          // clones of producers added
  int instructions_added = 0;  // clones plus the bitcasts they need
  int instructions_removed = 0;  // producers left with no use
  int pinned = 0;  // control edges keeping clones after their trigger point
  int64_t planned_peak_bytes = 0;
  std::vector<RematDecision> decisions;
};

// `costs` must have been run on the module before the call.
absl::StatusOr<GreedyRecomputeResult> RunGreedyRecompute(
    HloModule* module, const GreedyRecomputeConfig& config,
    const SizeFunction& size_fn, const HloCostAnalysis& costs);

// Recompute cost of an instruction in element operations.
double RecomputeCost(const HloCostAnalysis& costs,
                     const HloInstruction& instruction);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_GREEDY_RECOMPUTE_H_
