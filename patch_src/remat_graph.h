// The scheduled entry computation as the planner sees it, for a solver.
//
// One node per instruction that defines buffers or reads them (forwarding
// instructions -- tuple, get-tuple-element, bitcast, while -- define none and
// are folded into the nodes whose buffers they pass on), in schedule order.
// Each node carries its buffers (the size function's bytes and the last
// position the tracker keeps each alive), the FLOPs one more run of it costs
// (the compute cap's count), whether the planner may recompute it, and the
// nodes it reads. With the bytes that called computations hold at their call
// sites, the graph reproduces the tracker's profile (memory_tracker.h)
// exactly: a solver that keeps every value reaches the tracker's peak.
#ifndef XLA_SERVICE_REMAT_REMAT_GRAPH_H_
#define XLA_SERVICE_REMAT_REMAT_GRAPH_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/remat/memory_tracker.h"

namespace xla {
namespace remat {

struct RematGraphBuffer {
  int64_t bytes = 0;
  // Live from first to last position; first is the node's own position but
  // for entry parameters, live from the start.
  int first_position = 0;
  int last_position = 0;
  bool live_to_end = false;
};

struct RematGraphNode {
  std::string name;
  std::string opcode;
  int position = 0;  // in the entry's schedule
  double flops = 0;  // of one more run (RecomputeFlops)
  bool recomputable = false;
  bool candidate = false;  // recomputable and above the small-value limit
  // A candidate whose recomputation the planner can apply: one value of it
  // above the limit (a multi-output producer's elements read apart would
  // each clone it whole) and every later reader can take a clone
  // (UsesCanTakeAClone). What `optimal`'s model may recompute.
  bool movable = false;
  // The last position a recomputation of it may run at: where a buffer it
  // reads is first written over (an in-place writer, the update of a
  // donated parameter), else `positions`. A later clone would read the new
  // contents.
  int readable_until = std::numeric_limits<int>::max();
  std::vector<RematGraphBuffer> buffers;
  std::vector<int> reads;  // node ids, without repeats
};

struct RematGraph {
  std::string module;
  std::string memory_figure;  // the figure the platform allocates by
  int positions = 0;
  std::vector<RematGraphNode> nodes;
  // Bytes held by called computations at each position (sparse: only
  // positions that run a while, conditional or call).
  std::vector<std::pair<int, int64_t>> called_bytes;
  int64_t peak_bytes = 0;  // the tracker's peak on this schedule
  int peak_position = 0;
  double module_flops = 0;  // the report's flops_before
};

// The graph of the entry computation whose memory model is `memory`.
// `min_candidate_bytes`: values at or below it are not planner candidates.
// `overwritten_at`: per buffer of `memory`, the first position that writes
// over it (the planner's liveness, PlannerBuffer::overwritten_at); empty
// when none is.
absl::StatusOr<RematGraph> BuildRematGraph(
    absl::string_view module_name, const ComputationMemory& memory,
    const HloCostAnalysis& costs, int64_t min_candidate_bytes,
    absl::Span<const int> overwritten_at = {});

std::string RematGraphToJson(const RematGraph& graph);

// Writes the graph's JSON to `path`.
absl::Status WriteRematGraph(const RematGraph& graph, const std::string& path);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_GRAPH_H_
