#include "xla/service/remat/move_log.h"

#include <string>
#include <utility>

#include "absl/log/check.h"
#include "xla/hlo/ir/hlo_instruction.h"

namespace xla {
namespace remat {

void MoveLog::Reset(int slot_count) {
  // Never back to an earlier revision: a verdict kept for one must not
  // match a plan made after.
  const int64_t revision = revision_ + 1;
  *this = MoveLog();
  revision_ = revision;
  placed_at_.assign(slot_count, {});
}

AppliedMove& MoveLog::Begin() {
  ++revision_;
  moves_.emplace_back();
  current_ = &moves_.back();
  return *current_;
}

void MoveLog::Place(HloInstruction* instruction, int slot) {
  DCHECK(current_ != nullptr) << "a clone placed outside a move";
  DCHECK(0 <= slot && slot < static_cast<int>(placed_at_.size()))
      << "slot " << slot;
  placed_at_[slot].push_back(instruction);
  current_->new_instructions.push_back(instruction);
}

HloInstruction* MoveLog::FindBitcast(const HloInstruction* clone,
                                     const std::string& shape, int slot) const {
  auto found = bitcasts_.find(std::make_tuple(clone, shape, slot));
  return found == bitcasts_.end() ? nullptr : found->second;
}

void MoveLog::RememberBitcast(const HloInstruction* clone,
                              const std::string& shape, int slot,
                              HloInstruction* bitcast) {
  bitcasts_[std::make_tuple(clone, shape, slot)] = bitcast;
}

MoveLog::InstructionSet MoveLog::MarkTakenBack(int move_index) {
  ++revision_;
  AppliedMove& move = moves_[move_index];
  InstructionSet added(move.new_instructions.begin(),
                       move.new_instructions.end());
  for (auto it = bitcasts_.begin(); it != bitcasts_.end();) {
    if (added.contains(it->second)) {
      bitcasts_.erase(it++);
    } else {
      ++it;
    }
  }
  taken_back_.insert(added.begin(), added.end());
  taken_back_present_.insert(added.begin(), added.end());
  move.undone = true;
  return added;
}

double MoveLog::KeptCost() const {
  double cost = 0;
  for (const AppliedMove& move : moves_) {
    if (!move.undone) cost += move.cost;
  }
  return cost;
}

double MoveLog::KeptFlops() const {
  double flops = 0;
  for (const AppliedMove& move : moves_) {
    if (!move.undone) flops += move.flops;
  }
  return flops;
}

bool MoveLog::HasKept() const {
  for (const AppliedMove& move : moves_) {
    if (!move.undone) return true;
  }
  return false;
}

}  // namespace remat
}  // namespace xla
