#include "peak_breakdown.h"

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
#include "input_check.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/buffer_assignment.h"
#include "xla/service/buffer_value.h"
#include "xla/service/heap_simulator/heap_simulator.h"
#include "xla/service/hlo_value.h"
#include "xla/service/remat/alias_setup.h"
#include "xla/service/remat/memory_figure.h"
#include "xla/service/remat/target_alias_info.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace hlo_remat {
namespace {

using xla::HloValue;

struct Event {
  const HloValue* value;
  int64_t delta;
};

// Records the simulator's allocations and frees, in order, into a list the
// caller owns (the simulator destroys its algorithm before returning). Counts
// as NoFragmentationStatsHeap does: a shared buffer is allocated again.
class EventRecorder : public xla::HeapAlgorithm<HloValue> {
 public:
  explicit EventRecorder(std::vector<Event>* events) : events_(events) {}

  void Alloc(const HloValue* buffer, int64_t size) override {
    events_->push_back({buffer, size});
  }
  void Free(const HloValue* buffer, int64_t size) override {
    events_->push_back({buffer, -size});
  }
  absl::StatusOr<Result> Finish() override { return Result(); }

 private:
  std::vector<Event>* events_;
};

}  // namespace

absl::StatusOr<PeakBreakdown> ExplainPeak(
    const xla::HloModule& module, const xla::remat::SizeFunction& size_fn,
    int top, const xla::AliasInfo* alias_info_or_null) {
  TF_ASSIGN_OR_RETURN(std::unique_ptr<xla::remat::AliasSetup> aliases,
                      xla::remat::AliasSetup::Run(module, alias_info_or_null));
  xla::BufferValue::SizeFunction buffer_size =
      [&size_fn](const xla::BufferValue& b) { return size_fn(b.shape()); };
  std::vector<Event> events;
  TF_RETURN_IF_ERROR(
      xla::HeapSimulator::Run(std::make_unique<EventRecorder>(&events), module,
                              module.schedule(), aliases->analysis(),
                              aliases->alias_info(), &buffer_size)
          .status());

  // The first moment the running total is highest.
  PeakBreakdown out;
  out.entry = module.entry_computation()->name();
  int64_t live = 0;
  size_t peak_event = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    live += events[i].delta;
    if (live > out.peak_bytes) {
      out.peak_bytes = live;
      peak_event = i;
    }
  }
  if (events.empty()) return out;
  absl::flat_hash_map<const HloValue*, int64_t> held;
  for (size_t i = 0; i <= peak_event; ++i) {
    int64_t& bytes = held[events[i].value];
    bytes += events[i].delta;
    if (bytes == 0) held.erase(events[i].value);
  }
  out.reached_by = events[peak_event].value->instruction()->name();
  std::vector<LiveValue> values;
  absl::flat_hash_map<std::string, int64_t> per_computation;
  for (const auto& [value, bytes] : held) {
    LiveValue v = DescribeValue(value->instruction(), value->index(), bytes);
    per_computation[v.computation] += bytes;
    values.push_back(std::move(v));
  }
  out.live_values = static_cast<int64_t>(values.size());
  std::sort(values.begin(), values.end(),
            [](const LiveValue& a, const LiveValue& b) {
              return a.bytes != b.bytes ? a.bytes > b.bytes
                                        : a.instruction < b.instruction;
            });
  if (static_cast<int>(values.size()) > top) values.resize(top);
  out.largest = std::move(values);
  out.by_computation = LargestFirst(per_computation);
  return out;
}

LiveValue DescribeValue(const xla::HloInstruction* instruction,
                        const xla::ShapeIndex& index, int64_t bytes) {
  LiveValue v;
  v.instruction = absl::StrCat(
      instruction->name(),
      index.empty() ? "" : absl::StrCat("{", absl::StrJoin(index, ","), "}"));
  v.computation = instruction->parent()->name();
  v.shape = xla::ShapeUtil::HumanString(
      xla::ShapeUtil::GetSubshape(instruction->shape(), index));
  v.bytes = bytes;
  return v;
}

void AppendValueLine(const LiveValue& value, absl::string_view where,
                     std::string& out) {
  absl::StrAppendFormat(&out, "  %12d  %-40s %s%s\n", value.bytes,
                        value.instruction, value.shape, where);
}

std::vector<std::pair<std::string, int64_t>> LargestFirst(
    const absl::flat_hash_map<std::string, int64_t>& bytes) {
  std::vector<std::pair<std::string, int64_t>> out(bytes.begin(), bytes.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return out;
}

absl::StatusOr<PeakBreakdown> ExplainPeakOnCpu(
    const xla::HloModule& module, const xla::remat::SizeFunction& size_fn,
    int top) {
  TF_ASSIGN_OR_RETURN(PeakBreakdown out, ExplainPeak(module, size_fn, top,
                                                     /*alias_info=*/nullptr));
  const xla::remat::TargetAliasInfo alias_info(nullptr);
  TF_ASSIGN_OR_RETURN(
      std::unique_ptr<xla::BufferAssignment> assignment,
      xla::remat::AssignBuffersOnSchedule(module, size_fn, alias_info.get(),
                                          /*alignment=*/64));
  out.assigned_bytes = assignment->GetStats().total_allocation_bytes;
  return out;
}

std::string FormatPeakBreakdown(const PeakBreakdown& breakdown,
                                absl::string_view label) {
  std::string out = absl::StrFormat(
      "peak %s: %d bytes (HeapSimulator), reached allocating %s; %d values "
      "live; buffer assignment %d bytes\n",
      label, breakdown.peak_bytes, breakdown.reached_by, breakdown.live_values,
      breakdown.assigned_bytes);
  // A callee's values say where they live; the entry's, most of them, do
  // not repeat its (often long) name.
  for (const LiveValue& v : breakdown.largest) {
    const std::string where =
        v.computation == breakdown.entry
            ? ""
            : absl::StrCat("  [", ShownName(v.computation), "]");
    AppendValueLine(v, where, out);
  }
  absl::StrAppend(&out, "  by defining computation:\n");
  for (const auto& [computation, bytes] : breakdown.by_computation) {
    absl::StrAppendFormat(&out, "  %12d  %s\n", bytes, ShownName(computation));
  }
  return out;
}

}  // namespace hlo_remat
