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

void MarkOverwrittenBuffers(PlannerState& s) {
  auto mark = [&](int id, int slot, int writer) {
    s.liveness->MarkOverwritten(id, slot,
                                writer < s.n ? s.sequence[writer] : nullptr);
  };
  // In-place instructions (dynamic-update-slice, scatter, in-place
  // fusions...) write over an operand's buffer; a clone placed right before
  // the writer still reads the old contents.
  AliasInfo alias_info;
  for (int pos = 0; pos < s.n; ++pos) {
    const HloInstruction* instruction = s.sequence[pos];
    for (const auto& [operand, unused] :
         alias_info.GetInPlaceInputOutputPairs(instruction)) {
      for (int id :
           s.memory->Sources(instruction->operand(operand.operand_number),
                             operand.operand_index)) {
        mark(id, pos, pos);
      }
    }
  }
  // A while body's parameter and root are one buffer per element: an
  // element the body replaces is overwritten where its new value is defined
  // (the earliest definition among its sources), so clones reading the old
  // one stay strictly before that slot.
  if (IsWhileBody(s.computation)) {
    const HloInstruction* parameter = s.computation->parameter_instruction(0);
    ShapeUtil::ForEachLeafShape(
        parameter->shape(), [&](const Shape&, const ShapeIndex& index) {
          const std::vector<int>& old_ids = s.memory->Sources(parameter, index);
          const std::vector<int>& new_ids =
              s.memory->Sources(s.computation->root_instruction(), index);
          if (new_ids == old_ids) return;  // passed through
          int writer = s.n;
          for (int id : new_ids) {
            writer =
                std::min(writer, std::max(0, s.memory->buffers()[id].def_pos));
          }
          for (int id : old_ids) mark(id, writer - 1, writer);
        });
  }
  if (s.computation != s.module->entry_computation()) return;
  // Donated parameters (input_output_alias, e.g. weights the optimizer
  // updates) are overwritten by the earliest definition of an output aliased
  // with them; clones reading one stay strictly before that definition's
  // slot. No known writer: treated as overwritten from the start.
  s.module->input_output_alias_config().ForEachAlias(
      [&](const ShapeIndex& output_index,
          const HloInputOutputAliasConfig::Alias& alias) {
        int writer = 0;
        const std::vector<int>& ids =
            s.memory->Sources(s.computation->root_instruction(), output_index);
        if (!ids.empty()) {
          writer = s.n;
          for (int id : ids) {
            writer = std::min(writer, s.memory->buffers()[id].def_pos);
          }
        }
        const HloInstruction* parameter =
            s.computation->parameter_instruction(alias.parameter_number);
        for (int id : s.memory->AllSources(parameter)) {
          mark(id, writer - 1, writer);
        }
      });
}

// A candidate value read through `roots` (the producer, or its
// get-tuple-elements of one element) and their bitcasts.
void AddInitialValue(PlannerState& s, HloInstruction* producer,
                     int64_t tuple_index,
                     const std::vector<HloInstruction*>& roots, int buffer,
                     int pos) {
  const int b = buffer;
  if (s.memory->buffers()[b].defining != producer) return;
  if (s.liveness->buffer(b).live_to_end) return;
  if (s.liveness->Size(b) <= s.config.min_candidate_bytes) return;
  Value v;
  v.instruction = roots.front();
  v.producer = producer;
  v.tuple_index = tuple_index;
  v.origin = roots.front();
  v.buffer = b;
  v.def = pos;
  if (tuple_index >= 0) {
    for (int k : s.memory->AllSources(producer)) {
      if (k != b) v.transient += s.liveness->Size(k);
    }
  }
  // The group: the roots and every bitcast of them, transitively.
  std::vector<HloInstruction*> group = roots;
  for (size_t i = 0; i < group.size(); ++i) {
    if (i < roots.size() && group[i] != producer &&
        !group[i]->control_successors().empty()) {
      v.movable = false;
    }
    for (HloInstruction* user : group[i]->users()) {
      if (user->opcode() == HloOpcode::kBitcast) {
        if (!user->control_successors().empty()) v.movable = false;
        group.push_back(user);
        continue;
      }
      const HloOpcode op = user->opcode();
      if (op == HloOpcode::kTuple || op == HloOpcode::kGetTupleElement ||
          op == HloOpcode::kWhile || op == HloOpcode::kAddDependency ||
          op == HloOpcode::kOptimizationBarrier || op == HloOpcode::kDomain) {
        v.movable = false;  // its later uses cannot be redirected alone
      }
      for (int64_t k : user->OperandIndices(group[i])) {
        v.uses.push_back({user, k, group[i], s.memory->Position(user)});
      }
    }
  }
  v.cost = RecomputeCost(s.costs, *producer);
  v.flops = RecomputeFlops(s.costs, *producer);
  if (CompactShape(v.instruction->shape(), s.size_fn).has_value()) {
    ++s.result.compressible;
  }
  const int index = static_cast<int>(s.values.size());
  s.values.push_back(std::move(v));
  for (HloInstruction* member : group) s.value_of[member] = index;
  s.versions[roots.front()].push_back(index);
  s.values_by_def[pos].push_back(index);
}

void AddMultiOutputValues(PlannerState& s, HloInstruction* producer, int pos) {
  // A user of the whole tuple (a tuple, the root) would still need every
  // element where it is: then no element moves.
  if (producer == s.computation->root_instruction()) return;
  std::vector<std::vector<HloInstruction*>> readers(
      producer->shape().tuple_shapes().size());
  for (HloInstruction* user : producer->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return;
    readers[user->tuple_index()].push_back(user);
  }
  for (int64_t i = 0; i < static_cast<int64_t>(readers.size()); ++i) {
    if (readers[i].empty()) continue;  // scratch, or an unused output
    const std::vector<int>& ids = s.memory->Sources(producer, {i});
    if (ids.size() != 1) continue;
    AddInitialValue(s, producer, i, readers[i], ids[0], pos);
  }
}

}  // namespace

absl::Status InitPlannerState(PlannerState& s) {
  s.sequence = s.module->schedule().sequence(s.computation).instructions();
  s.n = static_cast<int>(s.sequence.size());
  const std::shared_ptr<const ComputationMemory>& given = s.config.entry_memory;
  if (given != nullptr && given->sequence() == s.sequence) {
    s.memory = given;
  } else {
    TF_ASSIGN_OR_RETURN(auto called,
                        CalledComputationPeaks(*s.module, s.size_fn));
    TF_ASSIGN_OR_RETURN(
        ComputationMemory memory,
        ComputationMemory::Build(
            s.computation, s.sequence,
            /*is_entry=*/s.computation == s.module->entry_computation(),
            s.size_fn, called));
    s.memory = std::make_shared<const ComputationMemory>(std::move(memory));
  }
  s.liveness = std::make_unique<LivenessModel>(s.n);
  for (const TrackedBuffer& b : s.memory->buffers()) {
    s.liveness->AddBuffer(b.size, b.def_pos, s.memory->LastPosition(b),
                          b.live_to_end);
  }
  for (int pos = 0; pos < s.n; ++pos) {
    const HloInstruction* reader = s.sequence[pos];
    // A get-tuple-element reads only the element it forwards: the other
    // outputs of a multi-output producer may die before it runs.
    if (reader->opcode() == HloOpcode::kGetTupleElement) {
      for (int id : s.memory->AllSources(reader)) s.liveness->SeedRead(id, pos);
      continue;
    }
    for (const HloInstruction* operand : reader->unique_operands()) {
      for (int id : s.memory->AllSources(operand)) {
        s.liveness->SeedRead(id, pos);
      }
    }
  }
  for (int id = 0; id < s.liveness->buffer_count(); ++id) {
    // Whatever else the tracker counted as a use stays a read for good.
    const std::multiset<int>& reads = s.liveness->buffer(id).reads;
    if (reads.empty() || *reads.rbegin() < s.liveness->End(id)) {
      s.liveness->SeedRead(id, s.liveness->End(id));
    }
  }
  s.defined_bytes.assign(s.n, 0);
  for (const TrackedBuffer& b : s.memory->buffers()) {
    if (b.def_pos >= 0 && b.def_pos < s.n) s.defined_bytes[b.def_pos] += b.size;
  }
  s.values_by_def.assign(s.n, {});
  s.clones_at_slot.assign(s.n, {});
  MarkOverwrittenBuffers(s);
  if (s.config.chains) {
    s.articulation = ArticulationPoints(*s.computation);
    s.result.articulation_points = static_cast<int>(s.articulation.size());
  }
  for (int pos = 0; pos < s.n; ++pos) {
    HloInstruction* instruction = s.sequence[pos];
    switch (ClassifyProducer(instruction)) {
      case ProducerKind::kNotRecomputable:
        break;
      case ProducerKind::kArray: {
        const std::vector<int>& ids = s.memory->Sources(instruction, {});
        if (ids.size() != 1) break;
        AddInitialValue(s, instruction, /*tuple_index=*/-1, {instruction},
                        ids[0], pos);
        break;
      }
      case ProducerKind::kMultiOutput:
        AddMultiOutputValues(s, instruction, pos);
        break;
    }
  }
  s.liveness->SetProfile(s.memory->profile());
  s.result.initial_peak_bytes = s.liveness->Max();
  return absl::OkStatus();
}

bool PlannerState::ProducerUnused(const HloInstruction* producer) const {
  if (producer == computation->root_instruction()) return false;
  for (const HloInstruction* user : producer->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return false;
    auto it = value_of.find(user);
    if (it != value_of.end() && values[it->second].producer == producer) {
      if (!values[it->second].dead) return false;
    } else if (user->user_count() > 0 ||
               user == computation->root_instruction()) {
      return false;
    }
  }
  return true;
}

const std::vector<int>& PlannerState::BuffersOf(
    const HloInstruction* instruction) const {
  auto it = extra_sources.find(instruction);
  if (it != extra_sources.end()) return it->second;
  auto cached = all_sources.find(instruction);
  if (cached == all_sources.end()) {
    cached =
        all_sources.emplace(instruction, memory->AllSources(instruction)).first;
  }
  return cached->second;
}

}  // namespace remat
}  // namespace xla
