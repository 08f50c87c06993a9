#include "xla/service/remat/memory_tracker.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_input_output_alias_config.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

// Subshapes in ForEachSubshape order, so a ShapeIndex maps to a slot.
std::vector<ShapeIndex> SubshapeIndices(const Shape& shape) {
  std::vector<ShapeIndex> out;
  ShapeUtil::ForEachSubshape(shape, [&](const Shape&, const ShapeIndex& index) {
    out.push_back(index);
  });
  return out;
}

int SlotOf(const Shape& shape, const ShapeIndex& index) {
  int slot = 0;
  int found = -1;
  ShapeUtil::ForEachSubshape(shape, [&](const Shape&, const ShapeIndex& i) {
    if (found < 0 && i == index) found = slot;
    ++slot;
  });
  return found;
}

// Instructions whose output is (part of) operand 0's buffers.
bool ForwardsOperandZero(const HloInstruction* instruction) {
  switch (instruction->opcode()) {
    case HloOpcode::kBitcast:
    case HloOpcode::kAddDependency:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kWhile:
    case HloOpcode::kDomain:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<const HloComputation*> SequentialCallees(
    const HloInstruction* instruction) {
  switch (instruction->opcode()) {
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall:
      return {instruction->called_computations().begin(),
              instruction->called_computations().end()};
    default:
      return {};
  }
}

const std::vector<int>& ComputationMemory::Sources(
    const HloInstruction* instruction, const ShapeIndex& index) const {
  static const std::vector<int>* const kNone = new std::vector<int>();
  auto it = sources_.find(instruction);
  if (it == sources_.end()) return *kNone;
  int slot = SlotOf(instruction->shape(), index);
  if (slot < 0) return *kNone;
  return it->second[slot];
}

std::vector<int> ComputationMemory::AllSources(
    const HloInstruction* instruction) const {
  std::vector<int> out;
  auto it = sources_.find(instruction);
  if (it == sources_.end()) return out;
  for (const std::vector<int>& ids : it->second) {
    for (int id : ids) {
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    }
  }
  return out;
}

absl::StatusOr<ComputationMemory> ComputationMemory::Build(
    const HloComputation* computation,
    const std::vector<HloInstruction*>& sequence, bool is_entry,
    const SizeFunction& size_fn,
    const absl::flat_hash_map<const HloComputation*, int64_t>& called_peaks,
    AliasedOutputs aliased_outputs) {
  ComputationMemory m;
  m.sequence_ = sequence;
  for (int pos = 0; pos < static_cast<int>(sequence.size()); ++pos) {
    m.position_[sequence[pos]] = pos;
  }
  for (const HloInstruction* instruction : computation->instructions()) {
    if (!m.position_.contains(instruction)) {
      return absl::FailedPreconditionError(
          absl::StrCat("instruction ", instruction->name(), " of computation ",
                       computation->name(), " is missing from the schedule"));
    }
  }
  m.DefineBuffers(is_entry, size_fn);
  m.RecordUses(computation->root_instruction());
  if (is_entry && aliased_outputs == AliasedOutputs::kInParameter) {
    m.CountAliasedOutputsInParameters(computation);
  }
  if (is_entry && aliased_outputs == AliasedOutputs::kOwnBytes) {
    m.EndDonatedParametersAtLastUse(computation);
  }
  m.BuildProfile(called_peaks);
  return m;
}

int ComputationMemory::NewBuffer(const HloInstruction* defining,
                                 const ShapeIndex& index, int64_t size,
                                 int def_pos) {
  TrackedBuffer b;
  b.defining = defining;
  b.index = index;
  b.size = size;
  b.def_pos = def_pos;
  buffers_.push_back(b);
  return static_cast<int>(buffers_.size()) - 1;
}

void ComputationMemory::DefineBuffers(bool is_entry,
                                      const SizeFunction& size_fn) {
  for (int pos = 0; pos < static_cast<int>(sequence_.size()); ++pos) {
    const HloInstruction* instruction = sequence_[pos];
    std::vector<ShapeIndex> indices = SubshapeIndices(instruction->shape());
    std::vector<std::vector<int>>& slots = sources_[instruction];
    slots.resize(indices.size());
    for (size_t element = 0; element < indices.size(); ++element) {
      const ShapeIndex& index = indices[element];
      const Shape& subshape =
          ShapeUtil::GetSubshape(instruction->shape(), index);
      const HloOpcode op = instruction->opcode();
      if (op == HloOpcode::kTuple && !index.empty()) {
        ShapeIndex rest(index.begin() + 1, index.end());
        slots[element] = Sources(instruction->operand(index[0]), rest);
      } else if (op == HloOpcode::kGetTupleElement) {
        ShapeIndex full = {instruction->tuple_index()};
        for (int64_t i : index) full.push_back(i);
        slots[element] = Sources(instruction->operand(0), full);
      } else if (ForwardsOperandZero(instruction) &&
                 instruction->operand_count() > 0) {
        slots[element] = Sources(instruction->operand(0), index);
      } else if (op == HloOpcode::kConstant) {
        // Constants live in their own read-only allocations, outside the
        // heap (HeapSimulator's default too).
        slots[element] = {};
      } else if (op == HloOpcode::kParameter) {
        // Inside a called computation, parameters are the caller's buffers.
        int64_t size = is_entry ? size_fn(subshape) : 0;
        int id = NewBuffer(instruction, index, size, 0);
        buffers_[id].live_to_end = is_entry;
        slots[element] = {id};
      } else {
        slots[element] = {
            NewBuffer(instruction, index, size_fn(subshape), pos)};
      }
    }
  }
}

// Every non-forwarding instruction uses all buffers of its operands; the
// root's buffers live to the end.
void ComputationMemory::RecordUses(const HloInstruction* root) {
  for (int pos = 0; pos < static_cast<int>(sequence_.size()); ++pos) {
    const HloInstruction* instruction = sequence_[pos];
    const HloOpcode op = instruction->opcode();
    bool forwards = op == HloOpcode::kTuple ||
                    op == HloOpcode::kGetTupleElement ||
                    ForwardsOperandZero(instruction);
    for (int64_t i = 0; i < instruction->operand_count(); ++i) {
      const HloInstruction* operand = instruction->operand(i);
      // A forwarding op still uses the operands it does not forward.
      if (forwards && (op != HloOpcode::kAddDependency || i == 0)) continue;
      for (const std::vector<int>& ids : sources_.at(operand)) {
        for (int id : ids) {
          buffers_[id].last_use_pos = std::max(buffers_[id].last_use_pos, pos);
        }
      }
    }
  }
  for (const std::vector<int>& ids : sources_.at(root)) {
    for (int id : ids) buffers_[id].live_to_end = true;
  }
}

void ComputationMemory::EndDonatedParametersAtLastUse(
    const HloComputation* entry) {
  const HloModule* module = entry->parent();
  if (module == nullptr) return;
  // Passed through to the output: live to the end after all.
  const std::vector<int> output = AllSources(entry->root_instruction());
  const absl::flat_hash_set<int> returned(output.begin(), output.end());
  module->input_output_alias_config().ForEachAlias(
      [&](const ShapeIndex& /*output_index*/,
          const HloInputOutputAliasConfig::Alias& alias) {
        if (alias.parameter_number >= entry->num_parameters()) return;
        const HloInstruction* parameter =
            entry->parameter_instruction(alias.parameter_number);
        for (int id : Sources(parameter, alias.parameter_index)) {
          if (!returned.contains(id)) buffers_[id].live_to_end = false;
        }
      });
}

void ComputationMemory::CountAliasedOutputsInParameters(
    const HloComputation* entry) {
  const HloModule* module = entry->parent();
  if (module == nullptr) return;
  module->input_output_alias_config().ForEachAlias(
      [&](const ShapeIndex& output_index,
          const HloInputOutputAliasConfig::Alias& /*alias*/) {
        const std::vector<int>& ids =
            Sources(entry->root_instruction(), output_index);
        if (ids.size() != 1) return;
        TrackedBuffer& buffer = buffers_[ids[0]];
        // Passed through: the parameter's own buffer, counted once already.
        if (buffer.defining->opcode() == HloOpcode::kParameter) return;
        buffer.size = 0;
      });
}

void ComputationMemory::BuildProfile(
    const absl::flat_hash_map<const HloComputation*, int64_t>& called_peaks) {
  const int n = static_cast<int>(sequence_.size());
  std::vector<int64_t> delta(n + 1, 0);
  for (const TrackedBuffer& b : buffers_) {
    if (b.size == 0) continue;
    delta[b.def_pos] += b.size;
    delta[LastPosition(b) + 1] -= b.size;
  }
  profile_.assign(n, 0);
  called_bytes_.assign(n, 0);
  int64_t running = 0;
  for (int pos = 0; pos < n; ++pos) {
    running += delta[pos];
    int64_t called = 0;
    for (const HloComputation* callee : SequentialCallees(sequence_[pos])) {
      auto it = called_peaks.find(callee);
      if (it != called_peaks.end()) called = std::max(called, it->second);
    }
    called_bytes_[pos] = called;
    profile_[pos] = running + called;
    if (profile_[pos] > peak_) {
      peak_ = profile_[pos];
      peak_position_ = pos;
    }
  }
}

absl::StatusOr<absl::flat_hash_map<const HloComputation*, int64_t>>
CalledComputationPeaks(const HloModule& module, const SizeFunction& size_fn) {
  absl::flat_hash_map<const HloComputation*, int64_t> peaks;
  // MakeComputationPostOrder puts callees before their callers.
  for (const HloComputation* computation : module.MakeComputationPostOrder()) {
    if (computation == module.entry_computation()) continue;
    if (!module.schedule().is_computation_scheduled(computation)) continue;
    TF_ASSIGN_OR_RETURN(
        ComputationMemory memory,
        ComputationMemory::Build(
            computation, module.schedule().sequence(computation).instructions(),
            /*is_entry=*/false, size_fn, peaks));
    peaks[computation] = memory.peak();
  }
  return peaks;
}

absl::StatusOr<ModuleMemory> TrackModuleMemory(const HloModule& module,
                                               const SizeFunction& size_fn,
                                               AliasedOutputs aliased_outputs) {
  if (!module.has_schedule()) {
    return absl::FailedPreconditionError(
        absl::StrCat("module ", module.name(), " has no schedule"));
  }
  ModuleMemory out;
  TF_ASSIGN_OR_RETURN(out.computation_peaks,
                      CalledComputationPeaks(module, size_fn));
  const HloComputation* entry = module.entry_computation();
  TF_ASSIGN_OR_RETURN(
      ComputationMemory memory,
      ComputationMemory::Build(
          entry, module.schedule().sequence(entry).instructions(),
          /*is_entry=*/true, size_fn, out.computation_peaks, aliased_outputs));
  out.peak_bytes = memory.peak();
  if (!memory.sequence().empty()) {
    out.peak_instruction = memory.sequence()[memory.peak_position()];
  }
  out.computation_peaks[entry] = memory.peak();
  out.entry = std::make_shared<const ComputationMemory>(std::move(memory));
  return out;
}

}  // namespace remat
}  // namespace xla
