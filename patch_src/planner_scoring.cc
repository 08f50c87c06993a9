#include "xla/service/remat/planner_scoring.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/remat/compact_layout.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/planner_values.h"
#include "xla/shape.h"
#include "xla/shape_util.h"

namespace xla {
namespace remat {

namespace {

// The state of one recompute evaluation. A link that turns out not to be
// clonable is taken back through the logs instead of trying it on copies of
// the sets (copying them at every level made deep searches quadratic).
struct ChainSearch {
  std::vector<int> chain;             // links found so far, operands first
  absl::flat_hash_set<int> in_chain;  // the value, `chain` and the descent
  absl::flat_hash_set<int> seen;      // buffers already counted
  std::vector<int> seen_log;          // `seen` in insertion order
  int64_t extension = 0;  // bytes held across the sweep's slot for the clone
  // The bytes the value frees: once the extension is sure to reach them the
  // move gains nothing, whatever the operands not yet read hold.
  int64_t frees = 0;
  // The least the extension can end at if one of the links being tried on
  // the way down is not clonable: it is held across instead. Whatever they
  // come to, the extension ends at no less than this or its present value
  // (it only grows from one operand to the next at each depth).
  int64_t least_if_links_fail = std::numeric_limits<int64_t>::max();
  bool gave_up = false;  // the extension is sure to outweigh `frees`
  int max_members = 0;   // the chain's members, the value included
  bool cut = false;      // a link was held across for want of room for it
  int horizon = 0;       // see Movable
  ScoreReads* reads = nullptr;  // what the search read of the state

  // Each thread's one search, emptied for the next evaluation: the sets
  // keep their storage, and scoring was a large share of the allocator's
  // work when each evaluation built its own.
  static ChainSearch& Fresh(int64_t frees, int max_members, int horizon,
                            ScoreReads* reads) {
    thread_local ChainSearch search;
    search.chain.clear();
    search.in_chain.clear();
    search.seen.clear();
    search.seen_log.clear();
    search.extension = 0;
    search.frees = frees;
    search.least_if_links_fail = std::numeric_limits<int64_t>::max();
    search.gave_up = false;
    search.max_members = max_members;
    search.cut = false;
    search.horizon = horizon;
    search.reads = reads;
    return search;
  }
};

bool ChainLink(const PlannerState& state, int index, ScoreReads& reads) {
  reads.values.push_back(index);
  const Value& value = state.values()[index];
  return !value.dead && value.generation < state.config().max_generations &&
         !state.IsArticulation(value.origin);
}

// Takes back the links tried since the marks: the link is not clonable.
void ForgetLinksSince(ChainSearch& search, size_t chain_mark, size_t seen_mark,
                      int64_t extension_mark) {
  for (size_t i = chain_mark; i < search.chain.size(); ++i) {
    search.in_chain.erase(search.chain[i]);
  }
  search.chain.resize(chain_mark);
  for (size_t i = seen_mark; i < search.seen_log.size(); ++i) {
    search.seen.erase(search.seen_log[i]);
  }
  search.seen_log.resize(seen_mark);
  search.extension = extension_mark;
}

// How a clone at `late_slot` can read `chosen`, seen from the sweep's `slot`.
enum class OperandReach {
  kOverwritten,  // a buffer of it is written before `late_slot`: it cannot
  kHeldAcross,   // a buffer of it ends before `slot`: read, it is held across
  kLive,         // live at `slot` (`horizon` narrowed to where that holds)
};

OperandReach ReachOf(const PlannerState& state, const HloInstruction* chosen,
                     int slot, int late_slot, int& horizon, ScoreReads& reads) {
  const LivenessModel& liveness = state.liveness();
  bool held_across = false;
  for (int buffer : state.BuffersOf(chosen)) {
    reads.buffers.push_back(buffer);
    if (liveness.buffer(buffer).overwritten_at < late_slot) {
      return OperandReach::kOverwritten;
    }
    if (liveness.Size(buffer) == 0 || liveness.buffer(buffer).live_to_end) {
      continue;
    }
    if (liveness.End(buffer) < slot) {
      held_across = true;
    } else {
      horizon = std::min(horizon, liveness.End(buffer) + 1);
    }
  }
  return held_across ? OperandReach::kHeldAcross : OperandReach::kLive;
}

// The bytes of `chosen`'s buffers not counted yet that a clone reading it
// would hold across `slot`: what reading it adds to the extension, and, for
// a link being tried, what holding it instead would add (one definition, so
// that the search's bound on the latter is exact).
int64_t UncountedHeldAcross(const PlannerState& state,
                            const HloInstruction* chosen, int slot,
                            const ChainSearch& search) {
  const LivenessModel& liveness = state.liveness();
  const std::vector<int>& buffers = state.BuffersOf(chosen);
  int64_t bytes = 0;
  for (auto it = buffers.begin(); it != buffers.end(); ++it) {
    const int buffer = *it;
    if (search.seen.contains(buffer) ||
        std::find(buffers.begin(), it, buffer) != it ||
        liveness.Size(buffer) == 0 || liveness.buffer(buffer).live_to_end) {
      continue;
    }
    if (liveness.End(buffer) < slot) bytes += liveness.Size(buffer);
  }
  return bytes;
}

// Adds the operands of `index` a clone at `late_slot` reads to the chain or
// to the extension held across `slot`. False when the clone cannot read
// them there, or when the search gives up (`gave_up`): the extension is
// sure to outweigh what the move frees, so what it read so far decides the
// score, and holds over the horizon narrowed so far. The operands left
// unread are not among the score's reads either, so a move of one of them
// does not score the value again (XLA:CPU fuses a deep ResNet's residual
// stream into fusions of up to 188 operands, dozens of them activations,
// and chains through such links read them all).
bool CollectOperands(const PlannerState& state, int index, int slot,
                     int late_slot, bool chains, ChainSearch& search) {
  for (HloInstruction* operand : state.values()[index].producer->operands()) {
    if (std::min(search.extension, search.least_if_links_fail) >=
        search.frees) {
      search.gave_up = true;
      return false;
    }
    HloInstruction* chosen =
        ChooseOperand(state, operand, late_slot, search.reads);
    const OperandReach reach =
        ReachOf(state, chosen, slot, late_slot, search.horizon, *search.reads);
    if (reach == OperandReach::kOverwritten) return false;
    const bool held_across = reach == OperandReach::kHeldAcross;
    // `in_chain` holds the value, the links kept and the links being tried
    // on the way down: the chain would have one member more. Bounding by it
    // (not by the links kept, which grow only on the way back up) bounds the
    // depth of the search too.
    if (held_across && chains) {
      // The operand may be a bitcast of the link (GPU HLO has one between
      // most fusions): the clone reads a bitcast of the link's clone.
      const int link = state.values().IndexOf(chosen);
      const bool a_link = link >= 0 && ChainLink(state, link, *search.reads);
      const bool room =
          static_cast<int>(search.in_chain.size()) + 1 <= search.max_members;
      // A link with no room is held across below: only there would a longer
      // chain search differently (an operand that is no link is held either
      // way, so a search again would only repeat this one).
      if (a_link && !room) search.cut = true;
      if (a_link && room) {
        if (search.in_chain.contains(link)) continue;
        const size_t chain_mark = search.chain.size();
        const size_t seen_mark = search.seen_log.size();
        const int64_t extension_mark = search.extension;
        const int64_t least_mark = search.least_if_links_fail;
        search.least_if_links_fail = std::min(
            least_mark,
            extension_mark + UncountedHeldAcross(state, chosen, slot, search));
        search.in_chain.insert(link);
        const bool clonable =
            CollectOperands(state, link, slot, late_slot, chains, search);
        search.least_if_links_fail = least_mark;
        if (search.gave_up) return false;
        if (clonable) {
          search.chain.push_back(link);
          continue;
        }
        // Not clonable there: keep the extension instead.
        ForgetLinksSince(search, chain_mark, seen_mark, extension_mark);
        search.in_chain.erase(link);
      }
    }
    search.extension += UncountedHeldAcross(state, chosen, slot, search);
    for (int buffer : state.BuffersOf(chosen)) {
      if (search.seen.insert(buffer).second) search.seen_log.push_back(buffer);
    }
  }
  return true;
}

// Whether the producer of `index` can run again at `late_slot` reading
// only the clones of `links` and operands live there: nothing is held
// across `slot` for it.
bool ReadsOnlyLinksAndLive(const PlannerState& state, int index, int slot,
                           int late_slot, const absl::flat_hash_set<int>& links,
                           int& horizon, ScoreReads& reads) {
  for (HloInstruction* operand : state.values()[index].producer->operands()) {
    HloInstruction* chosen = ChooseOperand(state, operand, late_slot, &reads);
    if (links.contains(state.values().IndexOf(chosen))) continue;
    if (ReachOf(state, chosen, slot, late_slot, horizon, reads) !=
        OperandReach::kLive) {
      return false;
    }
  }
  return true;
}

// The other values the chain's links were read by that are held across
// `slot` and first read again at `late_slot` or later: their clones read the
// links' clones at `late_slot`, so they come back for their own FLOPs only
// (Q, K and V of one fused QKV GEMM on GPU). Each is added to `out`'s
// companions.
void AddCompanions(const PlannerState& state, int index, int slot,
                   Candidate& out, int& horizon, ScoreReads& reads) {
  const ValueTable& values = state.values();
  absl::flat_hash_set<int> links(out.chain.begin(), out.chain.end());
  absl::flat_hash_set<const HloInstruction*> producers;
  for (int member : out.chain) producers.insert(values[member].producer);
  absl::flat_hash_set<int> considered = links;
  for (int link : out.chain) {
    if (link == index) continue;
    for (const Use& use : values[link].uses) {
      const int reader = values.IndexOf(use.user);
      if (reader < 0 || !considered.insert(reader).second) continue;
      const Value& companion = values[reader];
      if (companion.instruction != use.user ||
          producers.contains(companion.producer)) {
        continue;
      }
      int first_late = 0;
      // Whether it comes or not, the score lasts only while what made the
      // difference holds.
      if (!Movable(state, reader, slot, first_late, horizon, reads) ||
          first_late < out.first_late ||
          !ReadsOnlyLinksAndLive(state, reader, slot, out.first_late, links,
                                 horizon, reads)) {
        continue;
      }
      out.companions.push_back(reader);
      out.gain += state.liveness().Size(companion.buffer);
      out.cost += companion.cost;
      out.flops += companion.flops;
    }
  }
}

// The other elements of `index`'s multi-output producer held across `slot`
// and first read again at the recomputation's slot or later: the clone that
// rebuilds `index` makes them too (its transient otherwise), so it serves
// them for no FLOPs more (the two outputs of a GPU activation fusion, both
// read in the backward pass). Each is added to `out`'s siblings. For `path`
// only (PlannerConfig::siblings): on the zoo it moved `standard`'s lowest
// plan for VGG16 on h100_sxm from 0.784 to 0.800 of its figure.
void AddSiblings(const PlannerState& state, int index, int slot, Candidate& out,
                 int& horizon, ScoreReads& reads) {
  const ValueTable& values = state.values();
  const Value& value = values[index];
  if (value.tuple_index < 0) return;
  absl::flat_hash_set<int> considered = {index};
  for (const HloInstruction* user : value.producer->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) continue;
    const int sibling = values.IndexOf(user);
    if (sibling < 0 || !considered.insert(sibling).second) continue;
    const Value& found = values[sibling];
    if (found.producer != value.producer || found.instruction != user ||
        found.tuple_index == value.tuple_index) {
      continue;
    }
    int first_late = 0;
    // As for companions: the score lasts only while what decided it holds.
    if (!Movable(state, sibling, slot, first_late, horizon, reads) ||
        first_late < out.first_late) {
      continue;
    }
    out.siblings.push_back(sibling);
    out.gain += state.liveness().Size(found.buffer);
  }
}

}  // namespace

HloInstruction* ChooseOperand(const PlannerState& state,
                              HloInstruction* operand, int slot,
                              ScoreReads* reads) {
  const ValueTable& values = state.values();
  const int index = values.IndexOf(operand);
  if (index < 0) return operand;
  const Value& read = values[index];
  if (reads != nullptr) {
    reads->origins.push_back(read.origin);
    reads->buffers.push_back(read.buffer);
  }
  HloInstruction* best = operand;
  int best_end = state.liveness().End(read.buffer);
  for (int version : values.VersionsOf(read.origin)) {
    const Value& candidate = values[version];
    if (reads != nullptr) {
      reads->values.push_back(version);
      reads->buffers.push_back(candidate.buffer);
    }
    if (candidate.dead || candidate.def >= slot) continue;
    // Same shape is guaranteed: every version copies the same producer.
    if (state.liveness().End(candidate.buffer) > best_end) {
      best = candidate.instruction;
      best_end = state.liveness().End(candidate.buffer);
    }
  }
  return best;
}

bool Movable(const PlannerState& state, int index, int slot, int& first_late,
             int& horizon, ScoreReads& reads) {
  const Value& value = state.values()[index];
  reads.values.push_back(index);
  reads.buffers.push_back(value.buffer);
  if (value.dead || !value.movable) return false;
  if (value.def >= slot) {
    horizon = std::min(horizon, value.def + 1);
    return false;
  }
  if (value.generation >= state.config().max_generations) return false;
  const LivenessModel& liveness = state.liveness();
  if (liveness.buffer(value.buffer).live_to_end ||
      liveness.End(value.buffer) <= slot) {
    return false;
  }
  horizon = std::min(horizon, liveness.End(value.buffer));
  first_late = state.slot_count();
  for (const Use& use : value.uses) {
    if (use.slot == slot) {
      horizon = std::min(horizon, slot + 1);
      return false;  // needed right here
    }
    if (use.slot > slot) first_late = std::min(first_late, use.slot);
  }
  horizon = std::min(horizon, first_late);
  return first_late < state.slot_count();
}

namespace {

// The first slot at which an operand a clone of `index`'s producer at
// `late_slot` would read is written over (a weight the step updates in
// place), or `late_slot` when none is before it.
int ReadableUntil(const PlannerState& state, int index, int late_slot) {
  int until = late_slot;
  for (HloInstruction* operand : state.values()[index].producer->operands()) {
    const HloInstruction* chosen = ChooseOperand(state, operand, late_slot);
    for (int buffer : state.BuffersOf(chosen)) {
      until = std::min(until, state.liveness().buffer(buffer).overwritten_at);
    }
  }
  return until;
}

// What FindChain found: the chain's members, the value last, and what the
// clone frees; `found` false where no chain frees anything.
struct FoundChain {
  bool found = false;
  bool cut = false;  // a link was held across for want of room for it
  std::vector<int> members;
  int64_t gain = 0;
};

// The links a clone of `index` at `run_at` rebuilds, at most `max_members`
// with the value, and what it frees at `slot` (for `chains`, a chain with a
// link).
FoundChain FindChain(const PlannerState& state, int index, int slot, int run_at,
                     bool chains, int max_members, int& horizon,
                     ScoreReads& reads) {
  const int64_t size = state.liveness().Size(state.values()[index].buffer);
  ChainSearch& search = ChainSearch::Fresh(size, max_members, horizon, &reads);
  search.in_chain.insert(index);
  const bool clonable =
      CollectOperands(state, index, slot, run_at, chains, search);
  horizon = search.horizon;
  FoundChain found;
  found.cut = search.cut;
  if (!clonable) return found;
  if (chains && search.chain.empty()) return found;  // same as the plain move
  found.gain = size - search.extension;
  if (found.gain <= 0) return found;
  found.found = true;
  found.members = search.chain;
  found.members.push_back(index);
  return found;
}

}  // namespace

bool EvaluateRecompute(const PlannerState& state, int index, int slot,
                       bool chains, Candidate& out, int& horizon,
                       ScoreReads& reads) {
  int first_late = 0;
  if (!Movable(state, index, slot, first_late, horizon, reads)) return false;
  // The clones run at the first late use, or, where an operand is written
  // over before it, as late as it can still be read: the clone is then held
  // from there, and the value is freed before it all the same.
  const int run_at = ReadableUntil(state, index, first_late);
  if (run_at <= slot) return false;
  horizon = std::min(horizon, run_at);
  const PlannerConfig& config = state.config();
  FoundChain chain = FindChain(state, index, slot, run_at, chains,
                               config.max_chain_length, horizon, reads);
  if (!chain.found && chain.cut &&
      config.max_chain_length_when_cut > config.max_chain_length) {
    chain = FindChain(state, index, slot, run_at, chains,
                      config.max_chain_length_when_cut, horizon, reads);
  }
  if (!chain.found) return false;
  out = Candidate();
  out.kind = MoveKind::kRecompute;
  out.value = index;
  out.first_late = run_at;
  out.gain = chain.gain;
  for (int member : chain.members) {
    out.cost += state.values()[member].cost;
    out.flops += state.values()[member].flops;
  }
  out.chain = std::move(chain.members);
  if (chains) AddCompanions(state, index, slot, out, horizon, reads);
  // `path`'s moves, single or chained; `standard` clones one value a move.
  if (state.config().siblings) {
    AddSiblings(state, index, slot, out, horizon, reads);
  }
  return true;
}

bool EvaluateCompress(const PlannerState& state, int index, int slot,
                      Candidate& out, int& horizon, ScoreReads& reads) {
  int first_late = 0;
  if (!Movable(state, index, slot, first_late, horizon, reads)) return false;
  const Value& value = state.values()[index];
  std::optional<Shape> compact =
      CompactShape(value.instruction->shape(), state.size_fn());
  if (!compact.has_value()) return false;
  int last_early = value.def;
  for (const Use& use : value.uses) {
    if (use.slot < slot) last_early = std::max(last_early, use.slot);
  }
  // The compact copy reads the value at its slot; it must be behind the
  // sweep's slot to free anything there.
  const int copy_slot = last_early + 1;
  if (copy_slot >= slot) {
    horizon = std::min(horizon, copy_slot + 1);
    return false;
  }
  const int64_t size = state.liveness().Size(value.buffer);
  const int64_t compact_size = state.size_fn()(*compact);
  out = Candidate();
  out.kind = MoveKind::kCompress;
  out.value = index;
  out.first_late = first_late;
  out.gain = size - compact_size;
  out.cost = 2 * CopyCost(size, compact_size);
  out.flops = 2.0 * static_cast<double>(
                        ShapeUtil::ElementsIn(value.instruction->shape()));
  out.compress_slot = copy_slot;
  out.compact = std::move(compact);
  return true;
}

bool Score(const PlannerState& state, int index, int slot, ScoreCache& cache) {
  // Valid from the slot it was scored at (a new sweep starts again at 0,
  // possibly with nothing applied in between) up to its horizon.
  if (cache.valid && cache.from <= slot && slot < cache.until) return false;
  // Still valid, its reads are filed with the readers (a move that changed
  // any of them would have marked it stale): filed again only if it reads
  // something else now.
  const bool filed = cache.valid && cache.reads_filed;
  // Copied, not swapped out: each cache keeps the capacity its reads need.
  thread_local ScoreReads filed_reads;
  if (filed) filed_reads = cache.reads;
  cache.candidates.clear();
  cache.reads.Clear();
  cache.refused_in = -1;
  int horizon = state.slot_count();
  Candidate candidate;
  const PlannerConfig& config = state.config();
  if (config.recompute) {
    if (EvaluateRecompute(state, index, slot, /*chains=*/false, candidate,
                          horizon, cache.reads)) {
      cache.candidates.push_back(std::move(candidate));
    }
    if (config.chains && EvaluateRecompute(state, index, slot, true, candidate,
                                           horizon, cache.reads)) {
      cache.candidates.push_back(std::move(candidate));
    }
  }
  if (config.compress &&
      EvaluateCompress(state, index, slot, candidate, horizon, cache.reads)) {
    cache.candidates.push_back(std::move(candidate));
  }
  cache.valid = true;
  cache.from = slot;
  cache.until = horizon;
  cache.reads_filed = filed && cache.reads == filed_reads;
  return true;
}

}  // namespace remat
}  // namespace xla
