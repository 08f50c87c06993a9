#include "tracker_gap.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/utils/hlo_live_range.h"
#include "xla/service/hlo_value.h"
#include "xla/service/remat/alias_setup.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/statusor.h"

namespace hlo_remat {
namespace {

using xla::HloInstruction;

// A value by what defines it, the same on both sides, and its bytes.
using ValueKey = std::pair<const HloInstruction*, xla::ShapeIndex>;
using HeldBytes = absl::flat_hash_map<ValueKey, int64_t>;

// The values of `mine` the other side does not hold.
OneSided Unmatched(const HeldBytes& mine, const HeldBytes& theirs, int top) {
  OneSided out;
  std::vector<const HeldBytes::value_type*> only;
  absl::flat_hash_map<std::string, int64_t> by_opcode;
  for (const auto& held : mine) {
    if (theirs.contains(held.first)) continue;
    only.push_back(&held);
    ++out.count;
    out.bytes += held.second;
    by_opcode[xla::HloOpcodeString(held.first.first->opcode())] += held.second;
  }
  std::sort(only.begin(), only.end(), [](const auto* a, const auto* b) {
    return a->second != b->second
               ? a->second > b->second
               : a->first.first->name() < b->first.first->name();
  });
  for (int i = 0; i < static_cast<int>(only.size()) && i < top; ++i) {
    const auto& [key, bytes] = *only[i];
    out.largest.push_back(DescribeValue(key.first, key.second, bytes));
  }
  out.by_opcode = LargestFirst(by_opcode);
  return out;
}

void AppendOneSided(const OneSided& side, absl::string_view who,
                    std::string& out) {
  std::vector<std::string> kinds;
  for (const auto& [opcode, bytes] : side.by_opcode) {
    kinds.push_back(absl::StrCat(opcode, " ", bytes));
  }
  absl::StrAppendFormat(
      &out, "  only %s: %d values, %d bytes%s\n", who, side.count, side.bytes,
      kinds.empty() ? "" : absl::StrCat(" (", absl::StrJoin(kinds, ", "), ")"));
  for (const LiveValue& v : side.largest) AppendValueLine(v, "", out);
}

}  // namespace

absl::StatusOr<TrackerGap> FindTrackerGap(
    const xla::HloModule& module, const xla::remat::SizeFunction& size_fn,
    xla::remat::AliasedOutputs aliased_outputs, int top) {
  TF_ASSIGN_OR_RETURN(
      xla::remat::ModuleMemory memory,
      xla::remat::TrackModuleMemory(module, size_fn, aliased_outputs));
  const xla::remat::ComputationMemory& entry = *memory.entry;
  TrackerGap gap;
  if (entry.sequence().empty()) return gap;
  const int position = entry.peak_position();
  gap.tracker_peak_bytes = entry.peak();
  gap.tracker_peak_at = std::string(entry.sequence()[position]->name());

  HeldBytes tracked;
  for (const xla::remat::TrackedBuffer& buffer : entry.buffers()) {
    if (buffer.size == 0 || buffer.def_pos > position ||
        entry.LastPosition(buffer) < position) {
      continue;
    }
    tracked[{buffer.defining, buffer.index}] = buffer.size;
  }

  TF_ASSIGN_OR_RETURN(std::unique_ptr<xla::remat::AliasSetup> aliases,
                      xla::remat::AliasSetup::Run(module, nullptr));
  TF_ASSIGN_OR_RETURN(
      std::unique_ptr<xla::HloLiveRange> ranges,
      xla::HloLiveRange::Run(module.schedule(), aliases->analysis(),
                             module.entry_computation()));
  const auto time =
      ranges->instruction_schedule().find(entry.sequence()[position]);
  if (time == ranges->instruction_schedule().end()) {
    return absl::InternalError(absl::StrCat(
        "the tracker's peak ", gap.tracker_peak_at, " has no live-range time"));
  }
  HeldBytes simulated;
  absl::flat_hash_map<const xla::HloBuffer*, int64_t> buffers;
  for (const auto& [value, range] : ranges->buffer_live_ranges()) {
    // HeapSimulator gives constants no heap space (its default).
    if (range.start > time->second || range.end < time->second ||
        value->instruction()->opcode() == xla::HloOpcode::kConstant) {
      continue;
    }
    const int64_t bytes = size_fn(value->shape());
    const xla::HloBuffer& buffer =
        aliases->analysis().GetBufferContainingValue(*value);
    buffers[&buffer] = std::max(buffers[&buffer], bytes);
    simulated[{value->instruction(), value->index()}] = bytes;
  }
  for (const auto& [buffer, bytes] : buffers) gap.figure_live_bytes += bytes;
  gap.tracker_only = Unmatched(tracked, simulated, top);
  gap.figure_only = Unmatched(simulated, tracked, top);
  return gap;
}

std::string FormatTrackerGap(const TrackerGap& gap, absl::string_view label) {
  std::string out = absl::StrFormat(
      "tracker %s: %d bytes, the planner's count, at %s; HeapSimulator's live "
      "ranges hold %d bytes there\n",
      label, gap.tracker_peak_bytes, gap.tracker_peak_at,
      gap.figure_live_bytes);
  AppendOneSided(gap.tracker_only, "the tracker", out);
  AppendOneSided(gap.figure_only, "HeapSimulator", out);
  return out;
}

}  // namespace hlo_remat
