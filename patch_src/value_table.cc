#include "xla/service/remat/value_table.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/log/check.h"
#include "absl/types/span.h"
#include "xla/hlo/ir/hlo_instruction.h"

namespace xla {
namespace remat {

void ValueTable::Reset(int slot_count) {
  values_.clear();
  index_of_.clear();
  versions_.clear();
  defined_at_.assign(slot_count, {});
  active_.clear();
}

int ValueTable::IndexOf(const HloInstruction* reader) const {
  auto found = index_of_.find(reader);
  return found == index_of_.end() ? -1 : found->second;
}

absl::Span<const int> ValueTable::VersionsOf(
    const HloInstruction* origin) const {
  auto found = versions_.find(origin);
  if (found == versions_.end()) return {};
  return found->second;
}

int ValueTable::Add(Value value, absl::Span<HloInstruction* const> readers) {
  const int index = size();
  versions_[value.origin].push_back(index);
  defined_at_[value.def].push_back(index);
  values_.push_back(std::move(value));
  for (const HloInstruction* reader : readers) index_of_[reader] = index;
  return index;
}

void ValueTable::AddReader(const HloInstruction* reader, int index) {
  index_of_[reader] = index;
}

void ValueTable::AddUse(int index, const Use& use) {
  values_[index].uses.push_back(use);
}

bool ValueTable::KeepUses(int index, std::vector<Use> uses) {
  Value& value = values_[index];
  value.uses = std::move(uses);
  if (!value.uses.empty()) return false;
  value.dead = true;
  return true;
}

void ValueTable::Restore(int index, std::vector<Use> uses, bool dead) {
  values_[index].uses = std::move(uses);
  values_[index].dead = dead;
}

void ValueTable::Retire(int index) {
  Value& value = values_[index];
  value.dead = true;
  value.uses.clear();
  auto found = versions_.find(value.origin);
  if (found != versions_.end()) {
    std::vector<int>& list = found->second;
    list.erase(std::remove(list.begin(), list.end(), index), list.end());
  }
}

void ValueTable::RemoveUsesBy(
    int index, const absl::flat_hash_set<const HloInstruction*>& users) {
  std::vector<Use>& uses = values_[index].uses;
  uses.erase(
      std::remove_if(uses.begin(), uses.end(),
                     [&](const Use& use) { return users.contains(use.user); }),
      uses.end());
}

void ValueTable::Activate(int index) {
  DCHECK(0 <= index && index < size()) << "value " << index;
  Value& value = values_[index];
  if (value.active || value.dead) return;
  value.active = true;
  active_.push_back(index);
}

void ValueTable::DeactivateAll() {
  for (int index : active_) values_[index].active = false;
  active_.clear();
}

}  // namespace remat
}  // namespace xla
