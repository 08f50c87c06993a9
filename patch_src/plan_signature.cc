#include "xla/service/remat/plan_signature.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/ir/hlo_print_options.h"
#include "xla/service/remat/planner_edits.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {
namespace {

// What an instruction computes, without its name or its operands' names.
class ContentNames {
 public:
  explicit ContentNames(const PlannerState& state)
      : recycler_(state.recycler()) {
    const std::vector<HloInstruction*>& sequence = state.sequence();
    for (int slot = 0; slot < static_cast<int>(sequence.size()); ++slot) {
      const HloInstruction* original = sequence[slot];
      slot_of_[original] = slot;
      if (original->opcode() == HloOpcode::kFusion) {
        fusion_with_body_[original->fused_instructions_computation()] = slot;
      }
    }
  }

  std::string Of(const HloInstruction& instruction) const {
    if (auto original = slot_of_.find(&instruction);
        original != slot_of_.end()) {
      return absl::StrCat("o", original->second);
    }
    // A clone of a fusion is a clone of the original whose fused computation
    // it calls a copy of (a clone of a clone included): the same instruction
    // but for names.
    if (instruction.opcode() == HloOpcode::kFusion) {
      const HloComputation* body =
          recycler_.OriginalOf(instruction.fused_instructions_computation());
      if (auto original = fusion_with_body_.find(body);
          body != nullptr && original != fusion_with_body_.end()) {
        return absl::StrCat("f", original->second);
      }
    }
    // Other computations an added instruction calls are the original's
    // (shared, so named as they are); a fusion no recycler copy explains is
    // written out whole.
    HloPrintOptions options = HloPrintOptions::ShortParsable();
    options.set_print_operand_names(false)
        .set_canonicalize_instruction_names(true)
        .set_print_backend_config(true)
        .set_print_subcomputation_mode(
            instruction.opcode() == HloOpcode::kFusion
                ? HloPrintOptions::PrintSubcomputationMode::kFullBodies
                : HloPrintOptions::PrintSubcomputationMode::kNameOnly);
    return absl::StrCat("a", instruction.ToString(options));
  }

 private:
  const FusedComputationRecycler& recycler_;
  absl::flat_hash_map<const HloInstruction*, int> slot_of_;
  absl::flat_hash_map<const HloComputation*, int> fusion_with_body_;
};

}  // namespace

std::string PlanSignature(const PlannerState& state, const FinalOrder& order) {
  const HloComputation& computation = *state.computation();
  // Instructions by their place in the computation's list, which the copy
  // is cloned in the order of; those the planned order leaves out (what the
  // plan leaves unread, moves taken back) are in the list until the copy
  // removes them.
  absl::flat_hash_map<const HloInstruction*, int> place;
  for (const HloInstruction* instruction : computation.instructions()) {
    place.emplace(instruction, static_cast<int>(place.size()));
  }
  absl::flat_hash_map<const HloInstruction*, int> runs_at;
  for (const HloInstruction* instruction : order.sequence.instructions()) {
    runs_at.emplace(instruction, static_cast<int>(runs_at.size()));
  }
  auto place_of = [&](const HloInstruction* instruction) {
    auto found = place.find(instruction);
    return found == place.end() ? -1 : found->second;
  };
  const ContentNames names(state);
  std::string signature;
  for (const HloInstruction* instruction : computation.instructions()) {
    auto run = runs_at.find(instruction);
    absl::StrAppend(&signature, names.Of(*instruction), "@",
                    run == runs_at.end() ? -1 : run->second, "(");
    for (const HloInstruction* operand : instruction->operands()) {
      absl::StrAppend(&signature, place_of(operand), ",");
    }
    absl::StrAppend(&signature, ")after(");
    for (const HloInstruction* predecessor :
         instruction->control_predecessors()) {
      absl::StrAppend(&signature, place_of(predecessor), ",");
    }
    absl::StrAppend(&signature, ");");
  }
  absl::StrAppend(&signature, "root ",
                  place_of(computation.root_instruction()));
  return signature;
}

}  // namespace remat
}  // namespace xla
