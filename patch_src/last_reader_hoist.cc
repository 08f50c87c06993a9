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
#include "xla/service/remat/alias_setup.h"
#include "xla/service/remat/remat_candidates.h"
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
  // Entry parameters, get-tuple-elements and bitcasts it reads (through):
  // those placed at or after `to` (XLA puts them right before their first
  // reader) move along, ahead of it, each after what it reads.
  std::vector<HloInstruction*> aliases;
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
    int after = -1;  // the latest position it must follow
    const std::optional<int64_t> held = OwnBytes(reader, after);
    if (!held.has_value()) return std::nullopt;
    int64_t dying = 0;
    absl::flat_hash_set<const HloBuffer*> counted;
    std::vector<HloInstruction*> aliases;
    for (HloInstruction* operand : reader->operands()) {
      // An alias costs nothing where it is: what it reads sets the place.
      HloInstruction* source = operand;
      std::vector<HloInstruction*> chain;
      while (source->opcode() == HloOpcode::kGetTupleElement ||
             source->opcode() == HloOpcode::kBitcast) {
        chain.push_back(source);
        source = source->mutable_operand(0);
      }
      // An entry parameter is allocated for the whole step wherever it is
      // placed (XLA:GPU places each right before its first reader).
      if (source->opcode() == HloOpcode::kParameter) {
        chain.push_back(source);
      } else {
        after = std::max(after, order_.PositionOf(source));
      }
      aliases.insert(aliases.end(), chain.rbegin(), chain.rend());
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
    return Hoist{to, dying - *held, std::move(aliases)};
  }

 private:
  static bool Movable(const HloInstruction* instruction) {
    return IsRecomputable(instruction) &&
           instruction->control_predecessors().empty() &&
           instruction != instruction->parent()->root_instruction();
  }

  // The bytes of the buffers `instruction` defines that it allocates, and
  // in `after` the latest position it must follow to write them. A buffer it
  // writes in place (a donated parameter's updated weight, an in-place
  // update) is allocated already while an earlier value holds it: it costs
  // nothing earlier, but every use of what that value held must come first.
  // None when the buffer holds an earlier value read after `instruction`
  // (the order as given would be wrong) or one of another computation.
  std::optional<int64_t> OwnBytes(const HloInstruction* instruction,
                                  int& after) const {
    const HloDataflowAnalysis& dataflow = alias_analysis_.dataflow_analysis();
    const int position = order_.PositionOf(instruction);
    int64_t bytes = 0;
    bool movable = true;
    ShapeUtil::ForEachSubshape(
        instruction->shape(),
        [&](const Shape& subshape, const ShapeIndex& index) {
          if (!movable || !dataflow.ValueIsDefinedAt(instruction, index)) {
            return;
          }
          const HloBuffer& buffer = alias_analysis_.GetBufferContainingValue(
              dataflow.GetValueDefinedAt(instruction, index));
          bool held_before = false;
          for (const HloValue* value : buffer.values()) {
            const HloInstruction* writer = value->defining_instruction();
            if (writer == instruction) continue;
            const int written_at = order_.PositionOf(writer);
            if (written_at < 0) {
              movable = false;
              return;
            }
            if (written_at > position) continue;  // written after it is read
            held_before = true;
            // An entry parameter holds its buffer from the start, wherever
            // it is placed.
            if (writer->opcode() != HloOpcode::kParameter) {
              after = std::max(after, written_at);
            }
            for (const HloUse& use : value->GetUses()) {
              if (use.instruction == instruction) continue;
              const int used_at = order_.PositionOf(use.instruction);
              if (used_at < 0 || used_at > position) {
                movable = false;
                return;
              }
              after = std::max(after, used_at);
            }
          }
          if (!held_before) bytes += size_fn_(subshape);
        });
    if (!movable) return std::nullopt;
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
  TF_ASSIGN_OR_RETURN(std::unique_ptr<AliasSetup> aliases,
                      AliasSetup::Run(*module, alias_info));
  const HloAliasAnalysis* alias_analysis = &aliases->analysis();
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
    int to = hoist->to;
    for (HloInstruction* alias : hoist->aliases) {
      // Already ahead of its new place: placed early, read twice, or moved.
      const int at = order.PositionOf(alias);
      if (at < to) continue;
      order.MoveEarlier(at, to++);
    }
    order.MoveEarlier(position, to);
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
