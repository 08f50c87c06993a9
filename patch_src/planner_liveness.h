// The planner's liveness model: per buffer, where it is defined, which
// positions read it and so where it dies; the memory profile those live
// ranges add up to; and the log that lets one move be taken back exactly.
//
// It owns everything a move changes about memory and nothing about the HLO,
// so that scoring can read it without side effects and the move's HLO edits
// (planner_edits.h) can be undone separately from its bytes.
#ifndef XLA_SERVICE_REMAT_PLANNER_LIVENESS_H_
#define XLA_SERVICE_REMAT_PLANNER_LIVENESS_H_

#include <cstdint>
#include <memory>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/log/check.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/range_max_tree.h"

namespace xla {
namespace remat {

// One buffer of the planned computation: an original one, or one a clone or
// a copy placed by a move defines.
struct PlannerBuffer {
  int64_t size = 0;
  int def = 0;  // the slot that defines it
  int end = 0;  // the last slot it is live at
  // Live to the computation's end whatever reads it (outputs, parameters of
  // the entry...): reads neither extend nor shorten it.
  bool live_to_end = false;
  // Slots that read it, with repeats: a read moved away drops one of them.
  std::multiset<int> reads;
  bool freed = false;  // its producer was removed: reads no longer count
  // Slot from which its contents are gone: no clone placed after it may read
  // it. The number of positions when nothing overwrites it.
  int overwritten_at = 0;
  // The instruction that overwrites it (nullptr: none known). A clone reading
  // the buffer gets a control edge to it, so that a later scheduler cannot
  // move the write before the read.
  HloInstruction* writer = nullptr;
  // The last move that read or changed it; -1 for none.
  int touched_by = -1;
};

// What one move changed in the model, in the order it changed it.
struct LivenessUndo {
  std::vector<std::tuple<int, int, int64_t>> memory_adds;  // lo, hi, delta
  std::vector<std::pair<int, int>> old_ends;               // buffer, end before
  std::vector<std::tuple<int, int, bool>> reads;  // buffer, slot, added
  std::vector<int> freed;                         // buffers freed
  std::vector<std::pair<int, int>> old_touches;   // buffer, toucher before
};

class LivenessModel {
 public:
  // `positions`: the length of the schedule.
  explicit LivenessModel(int positions) : n_(positions) {}

  int positions() const { return n_; }
  int buffer_count() const { return static_cast<int>(buffers_.size()); }
  const PlannerBuffer& buffer(int id) const {
    DCHECK(0 <= id && id < buffer_count())
        << "buffer " << id << " of " << buffer_count();
    return buffers_[id];
  }
  int64_t Size(int id) const { return buffer(id).size; }
  int End(int id) const { return buffer(id).end; }

  // Building the model, before the profile is set: not logged.
  int AddBuffer(int64_t size, int def, int end, bool live_to_end);
  void SeedRead(int id, int slot) { buffers_[id].reads.insert(slot); }
  // Keeps the earliest overwrite of `id`.
  void MarkOverwritten(int id, int slot, HloInstruction* writer);
  // The live bytes at each position with the buffers as built.
  void SetProfile(const std::vector<int64_t>& profile);

  int64_t Max() const { return profile_->Max(); }
  // The peak over positions [lo, hi] (clipped); the lowest int64_t if empty.
  int64_t MaxIn(int lo, int hi) const { return profile_->Max(lo, hi); }
  int64_t At(int pos) const {
    DCHECK(0 <= pos && pos < n_) << "position " << pos << " of " << n_;
    return profile_->At(pos);
  }

  // Between these, every change is logged into `undo` and the buffers it
  // touches are marked as touched by move `move`.
  void BeginMove(int move, LivenessUndo* undo);
  void EndMove();

  void AddMemory(int lo, int hi, int64_t delta);
  void SetEnd(int id, int end);
  // A buffer lives from its definition to its last read; reads come and go
  // as uses move to clones and producers die.
  void AddRead(int id, int slot);
  void RemoveRead(int id, int slot);
  // Its producer is gone: later reads do not keep it alive.
  void Free(int id);
  void Touch(int id);

  // Takes back everything `undo` logged, newest first.
  void Revert(const LivenessUndo& undo);
  // True when no later move touched a buffer move `move` touched: it can be
  // taken back alone.
  bool Undoable(const LivenessUndo& undo, int move) const;
  // The peak with the memory `undo` added taken out; leaves the profile as
  // it found it.
  int64_t PeakWithout(const LivenessUndo& undo);

 private:
  void UpdateEnd(int id);

  int n_;
  std::vector<PlannerBuffer> buffers_;
  std::unique_ptr<RangeMaxTree> profile_;
  LivenessUndo* undo_ = nullptr;  // the move being applied
  int move_ = -1;
};

// Per buffer, the first slot that writes over it (the slot count where none
// does): what a clone may still read, by buffer, for the planner's graph.
std::vector<int> OverwrittenAt(const LivenessModel& liveness);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLANNER_LIVENESS_H_
