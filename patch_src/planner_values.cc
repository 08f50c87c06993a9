#include "xla/service/remat/planner_values.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_input_output_alias_config.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/remat/articulation_points.h"
#include "xla/service/remat/compact_layout.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/remat_candidates.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

namespace {

bool IsWhileBody(const HloComputation* computation) {
  for (const HloInstruction* caller :
       computation->caller_instructions(HloOpcode::kWhile)) {
    if (caller->while_body() == computation) {
      return true;
    }
  }
  return false;
}

}  // namespace

void PlannerState::MarkOverwrittenBuffers() {
  const int slot_count = this->slot_count();
  auto mark = [&](int id, int slot, int writer) {
    liveness_->MarkOverwritten(
        id, slot, writer < slot_count ? sequence_[writer] : nullptr);
  };
  // In-place instructions (dynamic-update-slice, scatter, in-place
  // fusions...) write over an operand's buffer; a clone placed right before
  // the writer still reads the old contents.
  AliasInfo alias_info;
  for (int slot = 0; slot < slot_count; ++slot) {
    const HloInstruction* instruction = sequence_[slot];
    for (const auto& [operand, unused] :
         alias_info.GetInPlaceInputOutputPairs(instruction)) {
      for (int id :
           memory_->Sources(instruction->operand(operand.operand_number),
                            operand.operand_index)) {
        mark(id, slot, slot);
      }
    }
  }
  // A while body's parameter and root are one buffer per element: an
  // element the body replaces is overwritten where its new value is defined
  // (the earliest definition among its sources), so clones reading the old
  // one stay strictly before that slot.
  if (IsWhileBody(computation_)) {
    const HloInstruction* parameter = computation_->parameter_instruction(0);
    ShapeUtil::ForEachLeafShape(
        parameter->shape(), [&](const Shape&, const ShapeIndex& index) {
          const std::vector<int>& old_ids = memory_->Sources(parameter, index);
          const std::vector<int>& new_ids =
              memory_->Sources(computation_->root_instruction(), index);
          if (new_ids == old_ids) return;  // passed through
          int writer = slot_count;
          for (int id : new_ids) {
            writer =
                std::min(writer, std::max(0, memory_->buffers()[id].def_pos));
          }
          for (int id : old_ids) mark(id, writer - 1, writer);
        });
  }
  if (computation_ != module_->entry_computation()) return;
  // Donated parameters (input_output_alias, e.g. weights the optimizer
  // updates) are overwritten by the earliest definition of an output aliased
  // with them; a clone reading one runs before that definition at the
  // latest (PlannerConfig::read_donated_until_written), or one position
  // earlier. No known writer: treated as overwritten from the start.
  module_->input_output_alias_config().ForEachAlias(
      [&](const ShapeIndex& output_index,
          const HloInputOutputAliasConfig::Alias& alias) {
        const std::vector<int>& ids =
            memory_->Sources(computation_->root_instruction(), output_index);
        int writer = 0;
        int overwritten_at = -1;
        if (!ids.empty()) {
          writer = slot_count;
          for (int id : ids) {
            writer = std::min(writer, memory_->buffers()[id].def_pos);
          }
          overwritten_at =
              config_.read_donated_until_written ? writer : writer - 1;
        }
        const HloInstruction* parameter =
            computation_->parameter_instruction(alias.parameter_number);
        for (int id : memory_->AllSources(parameter)) {
          mark(id, overwritten_at, writer);
        }
      });
}

// A candidate value read through `readers` (the producer, or its
// get-tuple-elements of one element) and their bitcasts.
void PlannerState::AddInitialValue(HloInstruction* producer,
                                   int64_t tuple_index,
                                   const std::vector<HloInstruction*>& readers,
                                   int buffer, int slot) {
  if (memory_->buffers()[buffer].defining != producer) return;
  if (liveness_->buffer(buffer).live_to_end) return;
  if (liveness_->Size(buffer) <= config_.min_candidate_bytes) return;
  Value value;
  value.instruction = readers.front();
  value.producer = producer;
  value.tuple_index = tuple_index;
  value.origin = readers.front();
  value.buffer = buffer;
  value.def = slot;
  if (tuple_index >= 0) {
    for (int other : memory_->AllSources(producer)) {
      if (other != buffer) value.transient += liveness_->Size(other);
    }
  }
  for (const HloInstruction* reader : readers) {
    if (!UsesCanTakeAClone(*producer, *reader)) value.movable = false;
  }
  // The group: the readers and every bitcast of them, transitively.
  std::vector<HloInstruction*> group = readers;
  for (size_t i = 0; i < group.size(); ++i) {
    for (HloInstruction* user : group[i]->users()) {
      if (user->opcode() == HloOpcode::kBitcast) {
        group.push_back(user);
        continue;
      }
      for (int64_t operand_no : user->OperandIndices(group[i])) {
        value.uses.push_back(
            {user, operand_no, group[i], memory_->Position(user)});
      }
    }
  }
  value.cost = RecomputeCost(costs_, *producer);
  value.flops = RecomputeFlops(costs_, *producer);
  if (CompactShape(value.instruction->shape(), size_fn_).has_value()) {
    ++result_.compressible;
  }
  values_.Add(std::move(value), group);
}

void PlannerState::AddMultiOutputValues(HloInstruction* producer, int slot) {
  // A user of the whole tuple (a tuple, the root) would still need every
  // element where it is: then no element moves.
  if (producer == computation_->root_instruction()) return;
  std::vector<std::vector<HloInstruction*>> readers(
      producer->shape().tuple_shapes().size());
  for (HloInstruction* user : producer->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return;
    readers[user->tuple_index()].push_back(user);
  }
  for (int64_t i = 0; i < static_cast<int64_t>(readers.size()); ++i) {
    if (readers[i].empty()) continue;  // scratch, or an unused output
    const std::vector<int>& ids = memory_->Sources(producer, {i});
    if (ids.size() != 1) continue;
    AddInitialValue(producer, i, readers[i], ids[0], slot);
  }
}

void PlannerState::AddValuesOf(HloInstruction* instruction, int slot) {
  switch (ClassifyProducer(instruction)) {
    case ProducerKind::kNotRecomputable:
      break;
    case ProducerKind::kArray: {
      const std::vector<int>& ids = memory_->Sources(instruction, {});
      if (ids.size() != 1) break;
      AddInitialValue(instruction, /*tuple_index=*/-1, {instruction}, ids[0],
                      slot);
      break;
    }
    case ProducerKind::kMultiOutput:
      AddMultiOutputValues(instruction, slot);
      break;
  }
}

absl::Status PlannerState::Init() {
  sequence_ = module_->schedule().sequence(computation_).instructions();
  const int slot_count = this->slot_count();
  const std::shared_ptr<const ComputationMemory>& given = config_.entry_memory;
  if (given != nullptr && given->sequence() == sequence_) {
    memory_ = given;
  } else {
    TF_ASSIGN_OR_RETURN(auto called,
                        CalledComputationPeaks(*module_, size_fn_));
    TF_ASSIGN_OR_RETURN(
        ComputationMemory memory,
        ComputationMemory::Build(
            computation_, sequence_,
            /*is_entry=*/computation_ == module_->entry_computation(), size_fn_,
            called, config_.aliased_outputs));
    memory_ = std::make_shared<const ComputationMemory>(std::move(memory));
  }
  liveness_ = std::make_unique<LivenessModel>(slot_count);
  for (const TrackedBuffer& buffer : memory_->buffers()) {
    liveness_->AddBuffer(buffer.size, buffer.def_pos,
                         memory_->LastPosition(buffer), buffer.live_to_end);
  }
  for (int slot = 0; slot < slot_count; ++slot) {
    const HloInstruction* reader = sequence_[slot];
    // A get-tuple-element reads only the element it forwards: the other
    // outputs of a multi-output producer may die before it runs.
    if (reader->opcode() == HloOpcode::kGetTupleElement) {
      for (int id : memory_->AllSources(reader)) liveness_->SeedRead(id, slot);
      continue;
    }
    for (const HloInstruction* operand : reader->unique_operands()) {
      for (int id : memory_->AllSources(operand)) {
        liveness_->SeedRead(id, slot);
      }
    }
  }
  for (int id = 0; id < liveness_->buffer_count(); ++id) {
    // Whatever else the tracker counted as a use stays a read for good.
    const std::multiset<int>& reads = liveness_->buffer(id).reads;
    if (reads.empty() || *reads.rbegin() < liveness_->End(id)) {
      liveness_->SeedRead(id, liveness_->End(id));
    }
  }
  defined_bytes_.assign(slot_count, 0);
  for (const TrackedBuffer& buffer : memory_->buffers()) {
    if (buffer.def_pos >= 0 && buffer.def_pos < slot_count) {
      defined_bytes_[buffer.def_pos] += buffer.size;
    }
  }
  values_.Reset(slot_count);
  moves_.Reset(slot_count);
  MarkOverwrittenBuffers();
  if (config_.chains) {
    articulation_ = ArticulationPoints(*computation_);
    result_.articulation_points = static_cast<int>(articulation_.size());
  }
  for (int slot = 0; slot < slot_count; ++slot) {
    AddValuesOf(sequence_[slot], slot);
  }
  liveness_->SetProfile(memory_->profile());
  result_.initial_peak_bytes = liveness_->Max();
  return absl::OkStatus();
}

bool PlannerState::ProducerUnused(const HloInstruction* producer) const {
  if (producer == computation_->root_instruction()) return false;
  for (const HloInstruction* user : producer->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return false;
    const int index = values_.IndexOf(user);
    if (index >= 0 && values_[index].producer == producer) {
      if (!values_[index].dead) return false;
    } else if (user->user_count() > 0 ||
               user == computation_->root_instruction()) {
      return false;
    }
  }
  return true;
}

const std::vector<int>& PlannerState::BuffersOf(
    const HloInstruction* instruction) const {
  auto added = added_sources_.find(instruction);
  if (added != added_sources_.end()) return added->second;
  auto cached = all_sources_.find(instruction);
  if (cached == all_sources_.end()) {
    cached = all_sources_.emplace(instruction, memory_->AllSources(instruction))
                 .first;
  }
  return cached->second;
}

}  // namespace remat
}  // namespace xla
