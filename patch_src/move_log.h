// The log of the planner's moves: what each changed (so that it can be taken
// back), the instructions placed at each slot, the control edges the plan
// will need, and the instructions of moves taken back. The edits
// (planner_edits.h) write it; the driver reads what the plan costs from it.
#ifndef XLA_SERVICE_REMAT_MOVE_LOG_H_
#define XLA_SERVICE_REMAT_MOVE_LOG_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/log/check.h"
#include "absl/types/span.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/value_table.h"

namespace xla {
namespace remat {

enum class MoveKind { kRecompute, kCompress };

// Everything one move changed, so that it can be taken back.
struct AppliedMove {
  int decision = -1;
  MoveKind kind = MoveKind::kRecompute;
  LivenessUndo liveness;
  struct Redirect {
    HloInstruction* user;
    int64_t operand_no;
    HloInstruction* old_operand;
  };
  std::vector<Redirect> redirects;
  // A value whose late uses the move took, as the move found it.
  struct MovedValue {
    int value;
    std::vector<Use> uses;
    bool dead;
  };
  // The value moved, then the companions recomputed with it and the
  // siblings its clone serves.
  std::vector<MovedValue> moved;
  std::vector<int> new_values;
  std::vector<int> operand_values;  // values given a use by a new instruction
  std::vector<HloInstruction*> new_instructions;
  int clones = 0;
  int64_t bytes_saved = 0;
  double cost = 0;
  double flops = 0;
  bool undone = false;
};

class MoveLog {
 public:
  using InstructionSet = absl::flat_hash_set<const HloInstruction*>;

  // Forgets everything; `slot_count` slots of the schedule.
  void Reset(int slot_count);

  int size() const { return static_cast<int>(moves_.size()); }
  const AppliedMove& operator[](int move_index) const {
    DCHECK(0 <= move_index && move_index < size())
        << "move " << move_index << " of " << size();
    return moves_[move_index];
  }
  absl::Span<const AppliedMove> all() const { return moves_; }

  // Opens the newest move; `current()` is it until End.
  AppliedMove& Begin();
  // Changes with every move made or taken back: two equal revisions are the
  // same plan.
  int64_t revision() const { return revision_; }
  void End() { current_ = nullptr; }
  // The move being applied; null between moves.
  AppliedMove* current() { return current_; }
  // Drops the newest move, taken back as soon as it was made.
  void DiscardNewest() { moves_.pop_back(); }
  // Drops every move (all taken back): a new plan starts.
  void Clear() { moves_.clear(); }

  // `instruction`, added by the current move, runs at `slot`.
  void Place(HloInstruction* instruction, int slot);
  absl::Span<HloInstruction* const> PlacedAt(int slot) const {
    DCHECK(0 <= slot && slot < static_cast<int>(placed_at_.size()))
        << "slot " << slot;
    return placed_at_[slot];
  }
  // `clone` stays after the instruction at `trigger_slot`.
  void Pin(HloInstruction* clone, int trigger_slot) {
    pins_.push_back({clone, trigger_slot});
  }
  absl::Span<const std::pair<HloInstruction*, int>> pins() const {
    return pins_;
  }
  // `reader` runs before `writer`, which overwrites what it reads.
  void Guard(HloInstruction* reader, HloInstruction* writer) {
    guards_.push_back({reader, writer});
  }
  absl::Span<const std::pair<HloInstruction*, HloInstruction*>> guards() const {
    return guards_;
  }
  // The bitcast of `clone` to the shape spelled `shape` placed at `slot`, if
  // one was made: one at a later slot cannot serve a read at `slot`.
  HloInstruction* FindBitcast(const HloInstruction* clone,
                              const std::string& shape, int slot) const;
  void RememberBitcast(const HloInstruction* clone, const std::string& shape,
                       int slot, HloInstruction* bitcast);

  // Move `move_index` is taken back: its instructions are never in the plan.
  // Returns them.
  InstructionSet MarkTakenBack(int move_index);
  // Instructions of moves taken back (some already deleted: MarkDropped).
  const InstructionSet& taken_back() const { return taken_back_; }
  // Those still in the computation.
  const InstructionSet& TakenBackPresent() const { return taken_back_present_; }
  // `deleted` are gone from the computation; the pointers only name them.
  void MarkDropped(const InstructionSet& deleted) {
    for (const HloInstruction* instruction : deleted) {
      taken_back_present_.erase(instruction);
    }
  }

  // What the moves not taken back cost, and their FLOPs.
  double KeptCost() const;
  double KeptFlops() const;
  bool HasKept() const;

 private:
  std::vector<AppliedMove> moves_;
  AppliedMove* current_ = nullptr;
  std::vector<std::vector<HloInstruction*>> placed_at_;
  std::vector<std::pair<HloInstruction*, int>> pins_;
  std::vector<std::pair<HloInstruction*, HloInstruction*>> guards_;
  absl::flat_hash_map<std::tuple<const HloInstruction*, std::string, int>,
                      HloInstruction*>
      bitcasts_;
  InstructionSet taken_back_;
  // taken_back_ less what was dropped since: kept as it changes, since
  // taken_back_ grows over the whole search.
  InstructionSet taken_back_present_;
  int64_t revision_ = 0;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_MOVE_LOG_H_
