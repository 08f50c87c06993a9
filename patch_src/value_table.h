// The values the planner may move, with their uses, their versions (a value
// and its clones) and which of them the sweep considers. Every change goes
// through an operation here, so that what a move did to the table is what
// RevertMove (planner_edits.h) undoes, and nothing else writes it.
#ifndef XLA_SERVICE_REMAT_VALUE_TABLE_H_
#define XLA_SERVICE_REMAT_VALUE_TABLE_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/log/check.h"
#include "absl/types/span.h"
#include "xla/hlo/ir/hlo_instruction.h"

namespace xla {
namespace remat {

// One read of a value: operand `operand_no` of `user`, which runs at `slot`.
struct Use {
  HloInstruction* user;
  int64_t operand_no;
  HloInstruction* via;  // the producer itself or one of its bitcasts
  int slot;
};

// A value the planner may move: an array defined by one instruction, seen
// through the bitcasts of it; or one element of a multi-output producer
// (ProducerKind::kMultiOutput), seen through the get-tuple-elements of that
// element and their bitcasts.
struct Value {
  // What the uses read: the producer itself, or a get-tuple-element of it.
  HloInstruction* instruction = nullptr;
  // What a recompute clones; `instruction` unless the value is an element.
  HloInstruction* producer = nullptr;
  int64_t tuple_index = -1;  // the element of `producer`; -1 for arrays
  // The producer's other outputs (scratch, workspace, unused fusion
  // outputs): a clone allocates them too, for the moment it runs.
  int64_t transient = 0;
  const HloInstruction* origin = nullptr;  // the instruction first cloned
  int buffer = -1;
  int def = 0;  // the slot that defines it
  std::vector<Use> uses;
  bool movable = true;
  bool dead = false;
  bool active = false;
  int generation = 0;
  double cost = 0;   // of producing it once more
  double flops = 0;  // the FLOPs of that (cost also counts bytes moved)
};

class ValueTable {
 public:
  // Forgets every value; `slot_count` slots of the schedule.
  void Reset(int slot_count);

  int size() const { return static_cast<int>(values_.size()); }
  const Value& operator[](int index) const {
    DCHECK(0 <= index && index < size())
        << "value " << index << " of " << size();
    return values_[index];
  }
  absl::Span<const Value> all() const { return values_; }
  // The value `reader` reads as (its instruction, a get-tuple-element or a
  // bitcast of it); -1 if none.
  int IndexOf(const HloInstruction* reader) const;
  // The versions of `origin`: the value first cloned and its live clones.
  absl::Span<const int> VersionsOf(const HloInstruction* origin) const;
  // The values defined at `slot`.
  absl::Span<const int> DefinedAt(int slot) const {
    DCHECK(0 <= slot && slot < static_cast<int>(defined_at_.size()))
        << "slot " << slot;
    return defined_at_[slot];
  }
  // The values the sweep considers, in the order they became candidates.
  absl::Span<const int> active() const { return active_; }

  // Adds `value`, read through `readers`; returns its index.
  int Add(Value value, absl::Span<HloInstruction* const> readers);
  // `reader` (a bitcast of a clone) reads value `index`.
  void AddReader(const HloInstruction* reader, int index);
  void AddUse(int index, const Use& use);
  // The uses before the trigger point stay; the value dies if none does.
  // Returns whether no use is left.
  bool KeepUses(int index, std::vector<Use> uses);
  // As a move found it.
  void Restore(int index, std::vector<Use> uses, bool dead);
  // A clone taken back: dead, unread, and no longer a version of its
  // origin (retried plans would otherwise pile up dead versions).
  void Retire(int index);
  void RemoveUsesBy(int index,
                    const absl::flat_hash_set<const HloInstruction*>& users);

  // Value `index` is a candidate of the sweep from now on (unless dead).
  void Activate(int index);
  // Drops the candidates that are dead or whose buffer ends before `slot`
  // (a clone that extends one activates it again).
  template <typename EndsBefore>
  void PruneActive(EndsBefore ends_before) {
    size_t keep = 0;
    for (int index : active_) {
      Value& value = values_[index];
      if (value.dead || ends_before(value)) {
        value.active = false;
        continue;
      }
      active_[keep++] = index;
    }
    active_.resize(keep);
  }
  void DeactivateAll();

 private:
  std::vector<Value> values_;
  absl::flat_hash_map<const HloInstruction*, int> index_of_;
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> versions_;
  std::vector<std::vector<int>> defined_at_;
  std::vector<int> active_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_VALUE_TABLE_H_
