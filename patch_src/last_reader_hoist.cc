#include "xla/service/remat/last_reader_hoist.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/analysis/hlo_alias_analysis.h"
#include "xla/hlo/analysis/hlo_dataflow_analysis.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/hlo_buffer.h"
#include "xla/service/hlo_value.h"
#include "xla/service/remat/remat_candidates.h"
#include "xla/service/remat/target_alias_info.h"
#include "xla/shape.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

// The entry's sequence and where each instruction is in it, kept up to date
// as instructions move.
class Order {
 public:
  explicit Order(std::vector<HloInstruction*> sequence)
      : sequence_(std::move(sequence)) {
    Renumber(0, sequence_.size());
  }
  int size() const { return static_cast<int>(sequence_.size()); }
  HloInstruction* at(int position) const { return sequence_[position]; }
  int PositionOf(const HloInstruction* instruction) const {
    auto it = position_.find(instruction);
    return it == position_.end() ? -1 : it->second;
  }
  // Moves the instruction at `from` to `to` (< from).
  void MoveEarlier(int from, int to) {
    HloInstruction* moved = sequence_[from];
    sequence_.erase(sequence_.begin() + from);
    sequence_.insert(sequence_.begin() + to, moved);
    Renumber(to, from + 1);
  }
  std::vector<HloInstruction*> Release() { return std::move(sequence_); }

 private:
  void Renumber(size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) position_[sequence_[i]] = i;
  }

  std::vector<HloInstruction*> sequence_;
  absl::flat_hash_map<const HloInstruction*, int> position_;
};

// Where `instruction` could run instead, and what moving it there frees.
struct Hoist {
  int to = -1;  // its new position
  int64_t bytes_freed = 0;
};

class LastReaderHoister {
 public:
  LastReaderHoister(const HloAliasAnalysis& alias_analysis,
                    const SizeFunction& size_fn, Order& order)
      : alias_analysis_(alias_analysis), size_fn_(size_fn), order_(order) {}

  // A move of the instruction at `position` that frees bytes, or none.
  std::optional<Hoist> Evaluate(int position) const {
    const HloInstruction* reader = order_.at(position);
    if (!Movable(reader)) return std::nullopt;
    const std::optional<int64_t> held = OwnBytes(reader);
    if (!held.has_value()) return std::nullopt;
    int after = -1;  // the latest position it must follow
    int64_t dying = 0;
    absl::flat_hash_set<const HloBuffer*> counted;
    for (const HloInstruction* operand : reader->operands()) {
      after = std::max(after, order_.PositionOf(operand));
      for (const HloValue* value :
           alias_analysis_.dataflow_analysis().GetValueSet(operand).values()) {
        const HloBuffer& buffer =
            alias_analysis_.GetBufferContainingValue(*value);
        if (!counted.insert(&buffer).second) continue;
        std::optional<int> other_readers = LastOtherReader(buffer, reader);
        if (!other_readers.has_value()) continue;  // does not die here
        after = std::max(after, *other_readers);
        dying += size_fn_(value->shape());
      }
    }
    const int to = after + 1;
    if (dying <= *held || to >= position) return std::nullopt;
    return Hoist{to, dying - *held};
  }

 private:
  static bool Movable(const HloInstruction* instruction) {
    return IsRecomputable(instruction) &&
           instruction->control_predecessors().empty() &&
           instruction != instruction->parent()->root_instruction();
  }

  // The bytes of the buffers `instruction` defines; none when one of them
  // holds another value too (its result would overwrite or be overwritten).
  std::optional<int64_t> OwnBytes(const HloInstruction* instruction) const {
    const HloDataflowAnalysis& dataflow = alias_analysis_.dataflow_analysis();
    int64_t bytes = 0;
    bool shared = false;
    ShapeUtil::ForEachSubshape(
        instruction->shape(),
        [&](const Shape& subshape, const ShapeIndex& index) {
          if (!dataflow.ValueIsDefinedAt(instruction, index)) return;
          const HloValue& value =
              dataflow.GetValueDefinedAt(instruction, index);
          if (alias_analysis_.GetBufferContainingValue(value).values().size() !=
              1) {
            shared = true;
          }
          bytes += size_fn_(subshape);
        });
    if (shared) return std::nullopt;
    return bytes;
  }

  // When `reader` is the last reader of `buffer` and the buffer dies with
  // it (not a parameter's, not live out): the position of its last other
  // reader (-1 if none). Otherwise none.
  std::optional<int> LastOtherReader(const HloBuffer& buffer,
                                     const HloInstruction* reader) const {
    const int reader_at = order_.PositionOf(reader);
    int last_other = -1;
    for (const HloValue* value : buffer.values()) {
      if (value->live_out_of_module() ||
          value->defining_instruction()->opcode() == HloOpcode::kParameter) {
        return std::nullopt;
      }
      const int defined_at = order_.PositionOf(value->defining_instruction());
      if (defined_at < 0) return std::nullopt;  // not of this computation
      last_other = std::max(last_other, defined_at);
      for (const HloUse& use : value->GetUses()) {
        if (use.instruction == reader) continue;
        const int used_at = order_.PositionOf(use.instruction);
        if (used_at < 0 || used_at > reader_at) return std::nullopt;
        last_other = std::max(last_other, used_at);
      }
    }
    return last_other;
  }

  const HloAliasAnalysis& alias_analysis_;
  const SizeFunction& size_fn_;
  Order& order_;
};

}  // namespace

absl::StatusOr<HoistResult> HoistLastReaders(HloModule* module,
                                             const SizeFunction& size_fn,
                                             const AliasInfo* alias_info) {
  HloComputation* entry = module->entry_computation();
  if (!module->has_schedule() ||
      !module->schedule().is_computation_scheduled(entry)) {
    return absl::FailedPreconditionError(
        absl::StrCat("module ", module->name(), " has no schedule"));
  }
  const TargetAliasInfo target_alias_info(alias_info);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<HloAliasAnalysis> alias_analysis,
                      HloAliasAnalysis::Run(module, target_alias_info.get()));
  const std::vector<HloInstruction*>& given =
      module->schedule().sequence(entry).instructions();
  Order order(given);
  LastReaderHoister hoister(*alias_analysis, size_fn, order);
  HoistResult result;
  // In schedule order: an instruction moves behind positions already
  // visited, so each is evaluated once, on the order so far.
  for (int position = 0; position < order.size(); ++position) {
    const std::optional<Hoist> hoist = hoister.Evaluate(position);
    if (!hoist.has_value()) continue;
    order.MoveEarlier(position, hoist->to);
    ++result.moved;
    result.bytes_freed += hoist->bytes_freed;
  }
  if (result.moved > 0) {
    module->schedule().set_sequence(entry,
                                    HloInstructionSequence(order.Release()));
  }
  return result;
}

}  // namespace remat
}  // namespace xla
