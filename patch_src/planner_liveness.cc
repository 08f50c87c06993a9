#include "xla/service/remat/planner_liveness.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "absl/log/check.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/range_max_tree.h"

namespace xla {
namespace remat {

int LivenessModel::AddBuffer(int64_t size, int def, int end, bool live_to_end) {
  PlannerBuffer buffer;
  buffer.size = size;
  buffer.def = def;
  buffer.end = std::max(def, end);
  buffer.live_to_end = live_to_end;
  buffer.overwritten_at = n_;
  buffers_.push_back(std::move(buffer));
  const int id = buffer_count() - 1;
  Touch(id);
  return id;
}

void LivenessModel::MarkOverwritten(int id, int slot, HloInstruction* writer) {
  PlannerBuffer& buffer = buffers_[id];
  if (slot < buffer.overwritten_at) {
    buffer.overwritten_at = slot;
    buffer.writer = writer;
  }
}

void LivenessModel::SetProfile(const std::vector<int64_t>& profile) {
  profile_ = std::make_unique<RangeMaxTree>(profile);
}

void LivenessModel::BeginMove(int move, LivenessUndo* undo) {
  move_ = move;
  undo_ = undo;
}

void LivenessModel::EndMove() {
  move_ = -1;
  undo_ = nullptr;
}

void LivenessModel::AddMemory(int lo, int hi, int64_t delta) {
  profile_->Add(lo, hi, delta);
  if (undo_ != nullptr) undo_->memory_adds.push_back({lo, hi, delta});
}

void LivenessModel::SetEnd(int id, int end) {
  DCHECK(0 <= id && id < buffer_count()) << "buffer " << id;
  DCHECK(end < n_) << "end " << end << " past the schedule's " << n_;
  if (undo_ != nullptr) undo_->old_ends.push_back({id, buffers_[id].end});
  buffers_[id].end = end;
  Touch(id);
}

void LivenessModel::AddRead(int id, int slot) {
  PlannerBuffer& buffer = buffers_[id];
  if (buffer.live_to_end || buffer.freed) return;
  buffer.reads.insert(slot);
  if (undo_ != nullptr) undo_->reads.push_back({id, slot, true});
  UpdateEnd(id);
}

void LivenessModel::RemoveRead(int id, int slot) {
  PlannerBuffer& buffer = buffers_[id];
  if (buffer.live_to_end || buffer.freed) return;
  auto it = buffer.reads.find(slot);
  if (it == buffer.reads.end()) return;
  buffer.reads.erase(it);
  if (undo_ != nullptr) undo_->reads.push_back({id, slot, false});
  UpdateEnd(id);
}

void LivenessModel::Free(int id) {
  buffers_[id].freed = true;
  if (undo_ != nullptr) undo_->freed.push_back(id);
}

void LivenessModel::UpdateEnd(int id) {
  const PlannerBuffer& buffer = buffers_[id];
  const int end = buffer.reads.empty()
                      ? buffer.def
                      : std::max(buffer.def, *buffer.reads.rbegin());
  const int old_end = buffer.end;
  if (end == old_end) return;
  if (end > old_end) {
    AddMemory(old_end + 1, end, buffer.size);
  } else {
    AddMemory(end + 1, old_end, -buffer.size);
  }
  SetEnd(id, end);
}

void LivenessModel::Touch(int id) {
  if (undo_ == nullptr) return;
  if (buffers_[id].touched_by == move_) return;
  undo_->old_touches.push_back({id, buffers_[id].touched_by});
  buffers_[id].touched_by = move_;
}

void LivenessModel::Revert(const LivenessUndo& undo) {
  for (auto it = undo.memory_adds.rbegin(); it != undo.memory_adds.rend();
       ++it) {
    profile_->Add(std::get<0>(*it), std::get<1>(*it), -std::get<2>(*it));
  }
  for (auto it = undo.old_ends.rbegin(); it != undo.old_ends.rend(); ++it) {
    buffers_[it->first].end = it->second;
  }
  for (int id : undo.freed) buffers_[id].freed = false;
  for (auto it = undo.reads.rbegin(); it != undo.reads.rend(); ++it) {
    const auto& [id, slot, added] = *it;
    std::multiset<int>& reads = buffers_[id].reads;
    if (added) {
      auto read = reads.find(slot);
      if (read != reads.end()) reads.erase(read);
    } else {
      reads.insert(slot);
    }
  }
  for (auto it = undo.old_touches.rbegin(); it != undo.old_touches.rend();
       ++it) {
    buffers_[it->first].touched_by = it->second;
  }
}

bool LivenessModel::Undoable(const LivenessUndo& undo, int move) const {
  for (const auto& [id, unused] : undo.old_touches) {
    if (buffers_[id].touched_by != move) return false;
  }
  return true;
}

int64_t LivenessModel::PeakWithout(const LivenessUndo& undo) {
  for (const auto& [lo, hi, delta] : undo.memory_adds) {
    profile_->Add(lo, hi, -delta);
  }
  const int64_t peak = profile_->Max();
  for (const auto& [lo, hi, delta] : undo.memory_adds) {
    profile_->Add(lo, hi, delta);
  }
  return peak;
}

std::vector<int> OverwrittenAt(const LivenessModel& liveness) {
  std::vector<int> at(liveness.buffer_count());
  for (int id = 0; id < liveness.buffer_count(); ++id) {
    at[id] = liveness.buffer(id).overwritten_at;
  }
  return at;
}

}  // namespace remat
}  // namespace xla
