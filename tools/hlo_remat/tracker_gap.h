// Where the planner's tracker and the platform's figure part: at the
// tracker's own peak, the values the tracker counts live and HeapSimulator's
// live ranges do not, and the other way round. The planner plans against the
// tracker, so what only the tracker holds there is a peak the planner works
// to lower and the figure never sees (docs/measured.md, "where a cold
// frontier goes"). A diagnostic for `hlo-remat --explain-peak N` on CPU
// modules, not part of the pass.
#ifndef HLO_REMAT_TRACKER_GAP_H_
#define HLO_REMAT_TRACKER_GAP_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "peak_breakdown.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/size_function.h"

namespace hlo_remat {

// The values one side holds at a position and the other does not.
struct OneSided {
  int64_t count = 0;
  int64_t bytes = 0;
  std::vector<LiveValue> largest;  // at most `top`, largest first
  // Bytes by the opcode that defines them, largest first.
  std::vector<std::pair<std::string, int64_t>> by_opcode;
};

struct TrackerGap {
  int64_t tracker_peak_bytes = 0;
  std::string tracker_peak_at;  // the entry's instruction at that position
  // What HeapSimulator's live ranges hold there, a buffer its values share
  // counted once.
  int64_t figure_live_bytes = 0;
  OneSided tracker_only;
  OneSided figure_only;
};

// The module must be scheduled. `aliased_outputs` is how the planner counts
// an output aliased with a donated parameter (TrackerAliasedOutputs).
absl::StatusOr<TrackerGap> FindTrackerGap(
    const xla::HloModule& module, const xla::remat::SizeFunction& size_fn,
    xla::remat::AliasedOutputs aliased_outputs, int top);

std::string FormatTrackerGap(const TrackerGap& gap, absl::string_view label);

}  // namespace hlo_remat

#endif  // HLO_REMAT_TRACKER_GAP_H_
