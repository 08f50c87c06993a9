#include "xla/service/remat/score_dependencies.h"

#include <tuple>
#include <utility>
#include <vector>

#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {
namespace {

// Grows `lists` to hold `id` and returns its list.
std::vector<int>& ListFor(std::vector<std::vector<int>>& lists, int id) {
  if (id >= static_cast<int>(lists.size())) lists.resize(id + 1);
  return lists[id];
}

void MarkReaders(PlannerState& state, std::vector<int>& readers) {
  std::vector<ScoreCache>& scores = state.scores();
  for (int reader : readers) {
    if (reader < static_cast<int>(scores.size())) {
      scores[reader].valid = false;
    }
  }
  readers.clear();  // they register again when re-scored
}

void MarkBuffer(PlannerState& state, int buffer) {
  std::vector<std::vector<int>>& lists = state.score_readers().of_buffer;
  if (buffer >= 0 && buffer < static_cast<int>(lists.size())) {
    MarkReaders(state, lists[buffer]);
  }
}

void MarkValue(PlannerState& state, int index) {
  std::vector<std::vector<int>>& lists = state.score_readers().of_value;
  if (index >= 0 && index < static_cast<int>(lists.size())) {
    MarkReaders(state, lists[index]);
  }
  // Its own score read it first of all, and may not be filed yet.
  if (index >= 0 && index < static_cast<int>(state.scores().size())) {
    state.scores()[index].valid = false;
  }
}

// The values whose producer is `instruction`: its own, or those of its
// elements read through get-tuple-elements.
void MarkValuesProducedBy(PlannerState& state,
                          const HloInstruction* instruction) {
  auto mark_if_produced = [&](const HloInstruction* reader) {
    const int index = state.values().IndexOf(reader);
    if (index >= 0 && state.values()[index].producer == instruction) {
      MarkValue(state, index);
    }
  };
  mark_if_produced(instruction);
  for (const HloInstruction* user : instruction->users()) {
    if (user->opcode() == HloOpcode::kGetTupleElement) mark_if_produced(user);
  }
}

}  // namespace

namespace {

// A score reads one buffer or value many times over: once in its list is
// enough (the lists only say whom to mark stale).
void AddReader(std::vector<int>& list, int index) {
  if (list.empty() || list.back() != index) list.push_back(index);
}

}  // namespace

void RegisterScoreReads(PlannerState& state, int index) {
  ScoreCache& cache = state.scores()[index];
  if (cache.reads_filed) return;
  cache.reads_filed = true;
  const ScoreReads& reads = cache.reads;
  ScoreReaders& readers = state.score_readers();
  for (int buffer : reads.buffers) {
    AddReader(ListFor(readers.of_buffer, buffer), index);
  }
  for (int value : reads.values) {
    AddReader(ListFor(readers.of_value, value), index);
  }
  for (const HloInstruction* origin : reads.origins) {
    AddReader(readers.of_origin[origin], index);
  }
}

void MarkScoresStale(PlannerState& state, const AppliedMove& move) {
  const LivenessUndo& log = move.liveness;
  for (const auto& [buffer, end] : log.old_ends) MarkBuffer(state, buffer);
  for (const auto& [buffer, slot, added] : log.reads) {
    MarkBuffer(state, buffer);
  }
  for (int buffer : log.freed) MarkBuffer(state, buffer);
  for (const auto& [buffer, toucher] : log.old_touches) {
    MarkBuffer(state, buffer);
  }
  for (const AppliedMove::MovedValue& moved : move.moved) {
    MarkValue(state, moved.value);
  }
  for (int value : move.operand_values) MarkValue(state, value);
  auto& of_origin = state.score_readers().of_origin;
  for (int value : move.new_values) {
    MarkValue(state, value);
    // A version added or dropped: every choice among them may change.
    auto it = of_origin.find(state.values()[value].origin);
    if (it != of_origin.end()) MarkReaders(state, it->second);
  }
  // A reader pointed at a clone reads other operands now.
  for (const AppliedMove::Redirect& redirect : move.redirects) {
    MarkValuesProducedBy(state, redirect.user);
  }
}

void MarkAllScoresStale(PlannerState& state) {
  for (ScoreCache& cache : state.scores()) cache.valid = false;
  // Emptied, not freed: the next sweep files about as many readers again.
  ScoreReaders& readers = state.score_readers();
  for (std::vector<int>& list : readers.of_buffer) list.clear();
  for (std::vector<int>& list : readers.of_value) list.clear();
  for (auto& [origin, list] : readers.of_origin) list.clear();
}

}  // namespace remat
}  // namespace xla
