// Where a module's memory is at its peak: the values the HeapSimulator holds
// at the moment it reaches its maximum (the figure the reports quote), the
// largest first, and their bytes per computation. A diagnostic for
// `hlo-remat --explain-peak N`, not part of the pass.
#ifndef HLO_REMAT_PEAK_BREAKDOWN_H_
#define HLO_REMAT_PEAK_BREAKDOWN_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/size_function.h"
#include "xla/shape_util.h"

namespace hlo_remat {

struct LiveValue {
  std::string instruction;  // defines the value
  std::string computation;
  std::string shape;
  int64_t bytes = 0;
};

struct PeakBreakdown {
  int64_t peak_bytes = 0;
  // The entry computation: a value it defines is shown without its name.
  std::string entry;
  // The value whose allocation reached the peak.
  std::string reached_by;
  std::vector<LiveValue> largest;  // at most `top`, largest first
  int64_t live_values = 0;
  // Every live value's bytes, summed by the computation that defines it,
  // largest first.
  std::vector<std::pair<std::string, int64_t>> by_computation;
  // What XLA's BufferAssigner allocates for the module on this schedule
  // (on CPU: XLA's default alias rules, 64-byte alignment, constants
  // included; on GPU: the pipeline's assignment). The simulator's
  // module-wide minimum counts a loop-state buffer once for each computation
  // that names it (the while, its condition's and its body's parameters), so
  // on loops the assignment is the figure an allocator sees.
  int64_t assigned_bytes = 0;
};

// The module must be scheduled. `alias_info` is the target's alias rules
// (GPU: the pipeline's); null, XLA's default. `assigned_bytes` is left for
// the caller, who has the platform's assignment (on GPU, the report's).
absl::StatusOr<PeakBreakdown> ExplainPeak(
    const xla::HloModule& module, const xla::remat::SizeFunction& size_fn,
    int top, const xla::AliasInfo* alias_info);

// ExplainPeak by XLA's default alias rules, with XLA:CPU's buffer assignment
// (64-byte alignment) as `assigned_bytes`.
absl::StatusOr<PeakBreakdown> ExplainPeakOnCpu(
    const xla::HloModule& module, const xla::remat::SizeFunction& size_fn,
    int top);

// The value `instruction` defines at `index`, holding `bytes`.
LiveValue DescribeValue(const xla::HloInstruction* instruction,
                        const xla::ShapeIndex& index, int64_t bytes);

// One value's line of a breakdown; `where` follows its shape.
void AppendValueLine(const LiveValue& value, absl::string_view where,
                     std::string& out);

// `bytes` by name as a list, the largest first (ties by name).
std::vector<std::pair<std::string, int64_t>> LargestFirst(
    const absl::flat_hash_map<std::string, int64_t>& bytes);

std::string FormatPeakBreakdown(const PeakBreakdown& breakdown,
                                absl::string_view label);

}  // namespace hlo_remat

#endif  // HLO_REMAT_PEAK_BREAKDOWN_H_
