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

void MarkReaders(PlannerState& s, std::vector<int>& readers) {
  for (int reader : readers) {
    if (reader < static_cast<int>(s.scores.size())) {
      s.scores[reader].valid = false;
    }
  }
  readers.clear();  // they register again when re-scored
}

void MarkBuffer(PlannerState& s, int b) {
  std::vector<std::vector<int>>& lists = s.score_readers.of_buffer;
  if (b >= 0 && b < static_cast<int>(lists.size())) MarkReaders(s, lists[b]);
}

void MarkValue(PlannerState& s, int index) {
  std::vector<std::vector<int>>& lists = s.score_readers.of_value;
  if (index >= 0 && index < static_cast<int>(lists.size())) {
    MarkReaders(s, lists[index]);
  }
  // Its own score read it first of all, and may not be filed yet.
  if (index >= 0 && index < static_cast<int>(s.scores.size())) {
    s.scores[index].valid = false;
  }
}

// The values whose producer is `instruction`: its own, or those of its
// elements read through get-tuple-elements.
void MarkValuesProducedBy(PlannerState& s, const HloInstruction* instruction) {
  auto mark_if_produced = [&](const HloInstruction* reader) {
    auto it = s.value_of.find(reader);
    if (it != s.value_of.end() &&
        s.values[it->second].producer == instruction) {
      MarkValue(s, it->second);
    }
  };
  mark_if_produced(instruction);
  for (const HloInstruction* user : instruction->users()) {
    if (user->opcode() == HloOpcode::kGetTupleElement) mark_if_produced(user);
  }
}

}  // namespace

void RegisterScoreReads(PlannerState& s, int index) {
  const ScoreReads& reads = s.scores[index].reads;
  for (int b : reads.buffers) {
    ListFor(s.score_readers.of_buffer, b).push_back(index);
  }
  for (int v : reads.values) {
    ListFor(s.score_readers.of_value, v).push_back(index);
  }
  for (const HloInstruction* origin : reads.origins) {
    s.score_readers.of_origin[origin].push_back(index);
  }
}

void MarkScoresStale(PlannerState& s, const AppliedMove& move) {
  const LivenessUndo& log = move.liveness;
  for (const auto& [b, end] : log.old_ends) MarkBuffer(s, b);
  for (const auto& [b, slot, added] : log.reads) MarkBuffer(s, b);
  for (int b : log.freed) MarkBuffer(s, b);
  for (const auto& [b, toucher] : log.old_touches) MarkBuffer(s, b);
  MarkValue(s, move.original);
  for (int v : move.operand_values) MarkValue(s, v);
  for (int v : move.new_values) {
    MarkValue(s, v);
    // A version added or dropped: every choice among them may change.
    auto it = s.score_readers.of_origin.find(s.values[v].origin);
    if (it != s.score_readers.of_origin.end()) MarkReaders(s, it->second);
  }
  // A reader pointed at a clone reads other operands now.
  for (const AppliedMove::Redirect& redirect : move.redirects) {
    MarkValuesProducedBy(s, redirect.user);
  }
}

void MarkAllScoresStale(PlannerState& s) {
  for (ScoreCache& cache : s.scores) cache.valid = false;
  s.score_readers = ScoreReaders();
}

}  // namespace remat
}  // namespace xla
