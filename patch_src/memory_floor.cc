#include "xla/service/remat/memory_floor.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/analysis/hlo_alias_analysis.h"
#include "xla/hlo/analysis/hlo_dataflow_analysis.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/hlo_buffer.h"
#include "xla/service/hlo_value.h"
#include "xla/service/remat/alias_setup.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

using BufferId = HloBuffer::Id;

// What one instruction keeps live at its own time: the buffers it uses and
// the buffers at its output positions, and the values it defines and uses
// (to find the operand buffers its results may reuse).
struct InstructionFootprint {
  absl::flat_hash_set<BufferId> buffers;
  std::vector<const HloValue*> defined;
  std::vector<const HloValue*> used;
};

// The buffers of a module as the floor counts them. A buffer is as large as
// its largest value. The HeapSimulator gives constants no memory, so a buffer
// holding one counts nothing here either: the floor must stay below the
// referee.
struct BufferFacts {
  absl::flat_hash_map<BufferId, int64_t> bytes;
  absl::flat_hash_set<BufferId> parameters;  // of the entry computation
  absl::flat_hash_set<BufferId> live_out;    // at the entry's root
  absl::flat_hash_map<const HloInstruction*, InstructionFootprint> footprint;

  int64_t BytesOf(BufferId id) const {
    auto it = bytes.find(id);
    return it == bytes.end() ? 0 : it->second;
  }
  int64_t BeyondParameters(const absl::flat_hash_set<BufferId>& ids) const {
    int64_t total = 0;
    for (BufferId id : ids) {
      if (!parameters.contains(id)) total += BytesOf(id);
    }
    return total;
  }
};

BufferFacts CollectBufferFacts(const HloAliasAnalysis& alias_analysis,
                               const SizeFunction& size_fn,
                               const HloComputation* entry) {
  BufferFacts facts;
  absl::flat_hash_set<BufferId> with_constant;
  for (const HloValue* value : alias_analysis.dataflow_analysis().values()) {
    const BufferId id = alias_analysis.GetBufferContainingValue(*value).id();
    int64_t& bytes = facts.bytes[id];
    bytes = std::max(bytes, size_fn(value->shape()));
    if (value->defining_instruction()->opcode() == HloOpcode::kConstant) {
      with_constant.insert(id);
    }
    for (const HloPosition& position : value->positions()) {
      facts.footprint[position.instruction].buffers.insert(id);
      if (position.instruction->parent() != entry) continue;
      if (position.instruction->opcode() == HloOpcode::kParameter) {
        facts.parameters.insert(id);
      }
      if (position.instruction == entry->root_instruction()) {
        facts.live_out.insert(id);
      }
    }
    facts.footprint[value->defining_instruction()].defined.push_back(value);
    for (const HloUse& use : value->GetUses()) {
      InstructionFootprint& user = facts.footprint[use.instruction];
      user.buffers.insert(id);
      user.used.push_back(value);
    }
  }
  for (BufferId id : with_constant) facts.bytes[id] = 0;
  return facts;
}

// A value alone in its buffer may take over the buffer of an operand value
// that dies here (the HeapSimulator's operand reuse): the two count once.
// Parameters and outputs never die, so they are never taken over. Returns
// the bytes counted twice otherwise.
int64_t ReusableBytes(const HloAliasAnalysis& alias_analysis,
                      const BufferFacts& facts, const AliasInfo* alias_info,
                      const HloInstruction* instruction,
                      const InstructionFootprint& fp) {
  auto buffer_of = [&](const HloValue* value) {
    return alias_analysis.GetBufferContainingValue(*value).id();
  };
  auto alone = [&](const HloValue* value) {
    return alias_analysis.GetBufferContainingValue(*value).values().size() == 1;
  };
  const HloDataflowAnalysis& dataflow = alias_analysis.dataflow_analysis();
  int64_t saved = 0;
  absl::flat_hash_set<const HloValue*> taken;
  for (const HloValue* result : fp.defined) {
    if (!alone(result) || instruction->opcode() == HloOpcode::kCopy) continue;
    for (const HloValue* operand : fp.used) {
      const BufferId id = buffer_of(operand);
      if (taken.contains(operand) || !alone(operand) ||
          facts.parameters.contains(id) || facts.live_out.contains(id) ||
          operand == result ||
          !instruction->IsUserOf(operand->defining_instruction()) ||
          !dataflow.CanShareOperandBufferWithUser(
              operand->defining_instruction(), operand->defining_index(),
              result->defining_instruction(), result->defining_index(),
              alias_info)) {
        continue;
      }
      taken.insert(operand);
      saved += std::min(facts.BytesOf(id), facts.BytesOf(buffer_of(result)));
      break;
    }
  }
  return saved;
}

}  // namespace

absl::StatusOr<MemoryFloor> ComputeMemoryFloor(const HloModule& module,
                                               const SizeFunction& size_fn,
                                               const AliasInfo* alias_info) {
  TF_ASSIGN_OR_RETURN(std::unique_ptr<AliasSetup> aliases,
                      AliasSetup::Run(module, alias_info, ScheduleNeeded::kNo));
  alias_info = aliases->alias_info();
  const HloAliasAnalysis* alias_analysis = &aliases->analysis();
  const BufferFacts facts =
      CollectBufferFacts(*alias_analysis, size_fn, module.entry_computation());

  MemoryFloor floor;
  for (BufferId id : facts.parameters)
    floor.parameter_bytes += facts.BytesOf(id);
  floor.bytes = floor.parameter_bytes + facts.BeyondParameters(facts.live_out);
  floor.at = "live-out";
  for (const auto& [instruction, fp] : facts.footprint) {
    // Values inside fusions get no buffers of their own; and asking whether
    // a nested fusion (a Triton GEMM's block fusion, whose root may be a
    // parameter) can share buffers crashes XLA's own query.
    if (instruction->parent()->IsFusionComputation()) continue;
    const int64_t bytes =
        floor.parameter_bytes + facts.BeyondParameters(fp.buffers) -
        ReusableBytes(*alias_analysis, facts, alias_info, instruction, fp);
    if (bytes > floor.bytes ||
        (bytes == floor.bytes && floor.at != "live-out" &&
         instruction->name() < floor.at)) {
      floor.bytes = bytes;
      floor.at = instruction->name();
    }
  }
  return floor;
}

}  // namespace remat
}  // namespace xla
