#include "xla/service/remat/move_peak_bound.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/planner_scoring.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/value_table.h"

namespace xla {
namespace remat {

namespace {

// The move adds `delta` bytes at every slot from `from` up to the clones'
// slot (a bound: at least that much where positive, at most where not).
struct ProfileStep {
  int from;
  int64_t delta;
};

// The moved values' buffers, each freed from no earlier than the slot after
// the last read that stays (its definition if none stays: it dies).
// Returns the latest definition among them: before it, a dying value's
// producer also gives up its reads, which this does not count.
int AddFrees(const PlannerState& state, const Candidate& candidate, int slot,
             std::vector<int>& moved_buffers, std::vector<ProfileStep>& steps) {
  const ValueTable& values = state.values();
  const LivenessModel& liveness = state.liveness();
  int last_def = 0;
  auto add = [&](int index) {
    const Value& value = values[index];
    last_def = std::max(last_def, value.def);
    if (absl::c_linear_search(moved_buffers, value.buffer)) return;
    moved_buffers.push_back(value.buffer);
    const PlannerBuffer& buffer = liveness.buffer(value.buffer);
    const bool keeps_a_use =
        std::any_of(value.uses.begin(), value.uses.end(),
                    [&](const Use& use) { return use.slot <= slot; });
    int kept_end = buffer.def;
    if (keeps_a_use) {
      // Only the late uses' reads go (RedirectLateUses).
      auto after = buffer.reads.upper_bound(slot);
      if (after != buffer.reads.begin()) {
        kept_end = std::max(kept_end, *std::prev(after));
      }
    }
    steps.push_back({keeps_a_use ? kept_end + 1 : buffer.def, -buffer.size});
  };
  add(candidate.value);
  for (int companion : candidate.companions) add(companion);
  for (int sibling : candidate.siblings) add(sibling);
  return last_def;
}

// The buffers the clones read (ReadOperand): each not yet read at the
// clones' slot is extended to it.
void AddHolds(const PlannerState& state, const Candidate& candidate,
              const std::vector<int>& moved_buffers,
              std::vector<ProfileStep>& steps) {
  const ValueTable& values = state.values();
  const LivenessModel& liveness = state.liveness();
  const int late_slot = candidate.first_late;
  absl::flat_hash_set<int> held;
  auto read_operands_of = [&](int member) {
    for (HloInstruction* operand : values[member].producer->operands()) {
      const HloInstruction* chosen = ChooseOperand(state, operand, late_slot);
      // A link of the chain (at most max_chain_length): read as its clone.
      if (absl::c_linear_search(candidate.chain, values.IndexOf(chosen))) {
        continue;
      }
      for (int id : state.BuffersOf(chosen)) {
        const PlannerBuffer& buffer = liveness.buffer(id);
        if (buffer.size == 0 || buffer.live_to_end || buffer.freed ||
            buffer.end >= late_slot ||
            absl::c_linear_search(moved_buffers, id) ||
            !held.insert(id).second) {
          continue;
        }
        steps.push_back({buffer.end + 1, buffer.size});
      }
    }
  };
  for (int member : candidate.chain) read_operands_of(member);
  for (int companion : candidate.companions) read_operands_of(companion);
}

}  // namespace

bool MoveSurelyRaisesPeak(const PlannerState& state, const Candidate& candidate,
                          int slot, int64_t threshold) {
  if (candidate.kind != MoveKind::kRecompute ||
      !candidate.reads_placed.empty()) {
    return false;
  }
  std::vector<ProfileStep> steps;
  std::vector<int> moved_buffers;  // the value's, companions', siblings'
  const int last_def = AddFrees(state, candidate, slot, moved_buffers, steps);
  AddHolds(state, candidate, moved_buffers, steps);
  // After every moved value's definition and before the clones' slot (where
  // the clones and their transient come in), the profile changes by the
  // steps alone.
  const int lo = last_def + 1;
  const int hi = candidate.first_late - 1;
  if (lo > hi) return false;
  std::sort(steps.begin(), steps.end(),
            [](const ProfileStep& a, const ProfileStep& b) {
              return a.from < b.from;
            });
  const LivenessModel& liveness = state.liveness();
  int64_t delta = 0;
  int from = lo;
  size_t next = 0;
  for (; next < steps.size() && steps[next].from <= lo; ++next) {
    delta += steps[next].delta;
  }
  while (from <= hi) {
    const int to =
        next < steps.size() ? std::min(hi, steps[next].from - 1) : hi;
    // The profile never stands above the threshold now: only a rise can.
    if (delta > 0 && liveness.MaxIn(from, to) + delta > threshold) return true;
    if (next >= steps.size() || to == hi) break;
    from = steps[next].from;
    for (; next < steps.size() && steps[next].from == from; ++next) {
      delta += steps[next].delta;
    }
  }
  return false;
}

}  // namespace remat
}  // namespace xla
