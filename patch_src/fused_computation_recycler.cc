#include "xla/service/remat/fused_computation_recycler.h"

#include <memory>
#include <string>

#include "xla/hlo/ir/hlo_clone_context.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"

namespace xla {
namespace remat {

std::unique_ptr<HloInstruction> FusedComputationRecycler::Clone(
    const HloInstruction& original, HloModule* module,
    const std::string& suffix) {
  if (original.opcode() != HloOpcode::kFusion) return original.Clone(suffix);
  const HloComputation* body = original.fused_instructions_computation();
  if (auto known = copy_of_.find(body); known != copy_of_.end()) {
    body = known->second;
  }
  std::unique_ptr<HloInstruction> clone;
  auto free = spares_.find(body);
  if (free != spares_.end() && !free->second.empty()) {
    // The clone context hands the spare to the fusion's clone in place of a
    // fresh copy of its body.
    HloCloneContext context(module);
    auto first = free->second.begin();
    context.MapComputation(original.fused_instructions_computation(),
                           first->second);
    free->second.erase(first);
    clone = original.Clone(suffix, &context);
  } else {
    clone = original.Clone(suffix);
  }
  copy_of_[clone->fused_instructions_computation()] = body;
  return clone;
}

void FusedComputationRecycler::Release(HloComputation* fused) {
  auto known = copy_of_.find(fused);
  if (known == copy_of_.end() || !fused->caller_instructions().empty()) {
    return;
  }
  spares_[known->second].emplace(fused->unique_id(), fused);
}

const HloComputation* FusedComputationRecycler::OriginalOf(
    const HloComputation* fused) const {
  auto known = copy_of_.find(fused);
  return known == copy_of_.end() ? nullptr : known->second;
}

int FusedComputationRecycler::spare_count() const {
  int count = 0;
  for (const auto& [body, free] : spares_) count += free.size();
  return count;
}

}  // namespace remat
}  // namespace xla
