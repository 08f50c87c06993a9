#include "xla/service/remat/sweep_replay.h"

#include <cstddef>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "xla/service/remat/planner_edits.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/value_table.h"
#include "xla/tsl/platform/errors.h"

namespace xla {
namespace remat {

bool ValueRenaming::RenameIndex(int& index) const {
  if (index < first_added_value_) return true;
  auto found = renamed_.find(index);
  if (found == renamed_.end()) return false;
  index = found->second;
  return true;
}

bool ValueRenaming::Rename(Candidate& candidate) const {
  if (!RenameIndex(candidate.value)) return false;
  for (std::vector<int>* list : {&candidate.chain, &candidate.reads_placed,
                                 &candidate.companions, &candidate.siblings}) {
    for (int& index : *list) {
      if (!RenameIndex(index)) return false;
    }
  }
  return true;
}

bool ValueRenaming::Add(absl::Span<const int> recorded,
                        absl::Span<const int> replayed) {
  if (recorded.size() != replayed.size()) return false;
  for (size_t i = 0; i < recorded.size(); ++i) {
    renamed_[recorded[i]] = replayed[i];
  }
  return true;
}

namespace {

// Whether `candidate` names only live values of `state` and slots of its
// schedule: a record of a module other than the one it is replayed on is
// refused before it is applied.
bool Applicable(const PlannerState& state, const Candidate& candidate,
                int slot) {
  const int slots = state.slot_count();
  if (slot < 0 || slot >= slots || candidate.first_late < 0 ||
      candidate.first_late >= slots ||
      (candidate.kind == MoveKind::kCompress &&
       (candidate.compress_slot < 0 || candidate.compress_slot >= slots))) {
    return false;
  }
  const ValueTable& values = state.values();
  auto live = [&](int index) {
    return 0 <= index && index < values.size() && !values[index].dead;
  };
  return live(candidate.value) && absl::c_all_of(candidate.chain, live) &&
         absl::c_all_of(candidate.reads_placed, live) &&
         absl::c_all_of(candidate.companions, live) &&
         absl::c_all_of(candidate.siblings, live);
}

}  // namespace

absl::StatusOr<bool> ReplaySweep(PlannerState& state,
                                 const SweepRecord& record) {
  ValueRenaming renaming(record.first_added_value);
  for (const RecordedMove& recorded : record.moves) {
    Candidate candidate = recorded.candidate;
    if (!renaming.Rename(candidate) ||
        !Applicable(state, candidate, recorded.slot)) {
      return false;
    }
    // Where the sweep was when it applied the move: clones are pinned there.
    state.set_sweep_slot(recorded.slot);
    TF_RETURN_IF_ERROR(ApplyMove(state, candidate, recorded.slot));
    const AppliedMove& applied = state.moves()[state.moves().size() - 1];
    if (!renaming.Add(recorded.new_values, applied.new_values)) return false;
  }
  // As the sweep leaves it: past the last slot.
  state.set_sweep_slot(state.slot_count() - 1);
  return state.liveness().Max() == record.peak &&
         state.moves().KeptFlops() == record.move_flops;
}

}  // namespace remat
}  // namespace xla
