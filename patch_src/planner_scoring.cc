#include "xla/service/remat/planner_scoring.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "xla/hlo/ir/hlo_instruction.h"
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
  int64_t extension = 0;              // bytes held across p for the clone
  int horizon = 0;                    // see Movable
  ScoreReads* reads = nullptr;        // what the search read of the state
};

bool ChainLink(const PlannerState& s, int index, ScoreReads& reads) {
  reads.values.push_back(index);
  const Value& v = s.values[index];
  return !v.dead && v.generation < s.config.max_generations &&
         !s.articulation.contains(v.origin);
}

// Adds the operands of `index` a clone at `u` reads to the chain or to the
// extension held across p. False when the clone cannot read them there.
bool CollectOperands(const PlannerState& s, int index, int p, int u,
                     bool chains, ChainSearch& search) {
  for (HloInstruction* operand : s.values[index].producer->operands()) {
    HloInstruction* chosen = ChooseOperand(s, operand, u, search.reads);
    // No move is applied while scoring: the reference stays valid.
    const std::vector<int>& ids = s.BuffersOf(chosen);
    bool held_across_p = false;
    for (int k : ids) {
      search.reads->buffers.push_back(k);
      if (s.liveness->buffer(k).overwritten_at < u) return false;
      if (s.liveness->Size(k) > 0 && !s.liveness->buffer(k).live_to_end) {
        if (s.liveness->End(k) < p) {
          held_across_p = true;
        } else {
          search.horizon = std::min(search.horizon, s.liveness->End(k) + 1);
        }
      }
    }
    // `in_chain` holds the value, the links kept and the links being tried
    // on the way down: the chain would have one member more. Bounding by it
    // (not by the links kept, which grow only on the way back up) bounds the
    // depth of the search too.
    if (held_across_p && chains &&
        static_cast<int>(search.in_chain.size()) + 1 <=
            s.config.max_chain_length) {
      auto it = s.value_of.find(chosen);
      if (it != s.value_of.end() &&
          s.values[it->second].instruction == chosen &&
          ChainLink(s, it->second, *search.reads)) {
        const int link = it->second;
        if (search.in_chain.contains(link)) continue;
        const size_t chain_mark = search.chain.size();
        const size_t seen_mark = search.seen_log.size();
        const int64_t extension_mark = search.extension;
        search.in_chain.insert(link);
        if (CollectOperands(s, link, p, u, chains, search)) {
          search.chain.push_back(link);
          continue;
        }
        // Not clonable there: keep the extension instead.
        for (size_t i = chain_mark; i < search.chain.size(); ++i) {
          search.in_chain.erase(search.chain[i]);
        }
        search.chain.resize(chain_mark);
        for (size_t i = seen_mark; i < search.seen_log.size(); ++i) {
          search.seen.erase(search.seen_log[i]);
        }
        search.seen_log.resize(seen_mark);
        search.extension = extension_mark;
        search.in_chain.erase(link);
      }
    }
    for (int k : ids) {
      if (!search.seen.insert(k).second) continue;
      search.seen_log.push_back(k);
      if (s.liveness->Size(k) == 0 || s.liveness->buffer(k).live_to_end) {
        continue;
      }
      if (s.liveness->End(k) < p) search.extension += s.liveness->Size(k);
    }
  }
  return true;
}

}  // namespace

HloInstruction* ChooseOperand(const PlannerState& s, HloInstruction* operand,
                              int slot, ScoreReads* reads) {
  auto it = s.value_of.find(operand);
  if (it == s.value_of.end() || s.values[it->second].instruction != operand) {
    return operand;
  }
  const Value& read = s.values[it->second];
  if (reads != nullptr) {
    reads->origins.push_back(read.origin);
    reads->buffers.push_back(read.buffer);
  }
  auto vit = s.versions.find(read.origin);
  if (vit == s.versions.end()) return operand;
  HloInstruction* best = operand;
  int best_end = s.liveness->End(read.buffer);
  for (int version : vit->second) {
    const Value& v = s.values[version];
    if (reads != nullptr) {
      reads->values.push_back(version);
      reads->buffers.push_back(v.buffer);
    }
    if (v.dead || v.def >= slot) continue;
    // Same shape is guaranteed: every version copies the same producer.
    if (s.liveness->End(v.buffer) > best_end) {
      best = v.instruction;
      best_end = s.liveness->End(v.buffer);
    }
  }
  return best;
}

bool Movable(const PlannerState& s, int index, int p, int& first_late,
             int& horizon, ScoreReads& reads) {
  reads.values.push_back(index);
  reads.buffers.push_back(s.values[index].buffer);
  const Value& v = s.values[index];
  if (v.dead || !v.movable) return false;
  if (v.def >= p) {
    horizon = std::min(horizon, v.def + 1);
    return false;
  }
  if (v.generation >= s.config.max_generations) return false;
  const int b = v.buffer;
  if (s.liveness->buffer(b).live_to_end || s.liveness->End(b) <= p) {
    return false;
  }
  horizon = std::min(horizon, s.liveness->End(b));
  first_late = s.n;
  for (const Use& use : v.uses) {
    if (use.pos == p) {
      horizon = std::min(horizon, p + 1);
      return false;  // needed right here
    }
    if (use.pos > p) first_late = std::min(first_late, use.pos);
  }
  horizon = std::min(horizon, first_late);
  return first_late < s.n;
}

bool EvaluateRecompute(const PlannerState& s, int index, int p, bool chains,
                       Candidate& out, int& horizon, ScoreReads& reads) {
  int first_late = 0;
  if (!Movable(s, index, p, first_late, horizon, reads)) return false;
  ChainSearch search;
  search.in_chain.insert(index);
  search.horizon = horizon;
  search.reads = &reads;
  const bool clonable =
      CollectOperands(s, index, p, first_late, chains, search);
  horizon = search.horizon;
  if (!clonable) return false;
  std::vector<int>& chain = search.chain;
  if (chains && chain.empty()) return false;  // same as the plain move
  chain.push_back(index);
  const int64_t gain =
      s.liveness->Size(s.values[index].buffer) - search.extension;
  if (gain <= 0) return false;
  out = Candidate();
  out.kind = MoveKind::kRecompute;
  out.value = index;
  out.first_late = first_late;
  out.gain = gain;
  for (int member : chain) {
    out.cost += s.values[member].cost;
    out.flops += s.values[member].flops;
  }
  out.chain = std::move(chain);
  return true;
}

bool EvaluateCompress(const PlannerState& s, int index, int p, Candidate& out,
                      int& horizon, ScoreReads& reads) {
  int first_late = 0;
  if (!Movable(s, index, p, first_late, horizon, reads)) return false;
  const Value& v = s.values[index];
  std::optional<Shape> compact =
      CompactShape(v.instruction->shape(), s.size_fn);
  if (!compact.has_value()) return false;
  int last_early = v.def;
  for (const Use& use : v.uses) {
    if (use.pos < p) last_early = std::max(last_early, use.pos);
  }
  // The compact copy reads the value at its slot; it must be behind p to
  // free anything there.
  const int slot = last_early + 1;
  if (slot >= p) {
    horizon = std::min(horizon, slot + 1);
    return false;
  }
  const int64_t size = s.liveness->Size(v.buffer);
  const int64_t compact_size = s.size_fn(*compact);
  out = Candidate();
  out.kind = MoveKind::kCompress;
  out.value = index;
  out.first_late = first_late;
  out.gain = size - compact_size;
  out.cost = 2 * CopyCost(size, compact_size);
  out.flops =
      2.0 * static_cast<double>(ShapeUtil::ElementsIn(v.instruction->shape()));
  out.compress_slot = slot;
  out.compact = std::move(compact);
  return true;
}

bool Score(const PlannerState& s, int index, int p, ScoreCache& cache) {
  // Valid from the position it was scored at (a new sweep starts again at
  // 0, possibly with nothing applied in between) up to its horizon.
  if (cache.valid && cache.from <= p && p < cache.until) return false;
  cache.candidates.clear();
  cache.reads.Clear();
  int horizon = s.n;
  Candidate c;
  if (s.config.recompute) {
    if (EvaluateRecompute(s, index, p, /*chains=*/false, c, horizon,
                          cache.reads)) {
      cache.candidates.push_back(std::move(c));
    }
    if (s.config.chains &&
        EvaluateRecompute(s, index, p, true, c, horizon, cache.reads)) {
      cache.candidates.push_back(std::move(c));
    }
  }
  if (s.config.compress &&
      EvaluateCompress(s, index, p, c, horizon, cache.reads)) {
    cache.candidates.push_back(std::move(c));
  }
  cache.valid = true;
  cache.from = p;
  cache.until = horizon;
  return true;
}

}  // namespace remat
}  // namespace xla
