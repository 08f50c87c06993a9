#include "xla/service/remat/planner_edits.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/planner_scoring.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/remat_decision.h"
#include "xla/service/remat/remat_planner.h"
#include "xla/shape.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

void Activate(PlannerState& s, int index) {
  Value& v = s.values[index];
  if (v.active || v.dead) return;
  v.active = true;
  s.active.push_back(index);
}

namespace {

// What the plan leaves: producers no use is left for, and the order of
// the computation with the clones and copies at their slots.
struct FinalOrder {
  absl::flat_hash_set<const HloInstruction*> dead;
  HloInstructionSequence sequence;
};

HloInstruction* BitcastOf(PlannerState& s, HloInstruction* clone,
                          const Shape& shape, int slot) {
  auto key = std::make_pair(static_cast<const HloInstruction*>(clone),
                            ShapeUtil::HumanStringWithLayout(shape));
  auto it = s.bitcasts.find(key);
  if (it != s.bitcasts.end()) return it->second;
  HloInstruction* bitcast = s.computation->AddInstruction(
      HloInstruction::CreateBitcast(shape, clone));
  s.bitcasts[key] = bitcast;
  std::vector<int> sources = s.extra_sources[clone];  // copy: the map may grow
  s.extra_sources[bitcast] = std::move(sources);
  s.value_of[bitcast] = s.value_of[clone];
  s.clones_at_slot[slot].push_back(bitcast);
  s.current->new_instructions.push_back(bitcast);
  ++s.result.instructions_added;
  return bitcast;
}

int RegisterValue(PlannerState& s, HloInstruction* instruction,
                  const HloInstruction* origin, int buffer, int def,
                  int generation, double cost) {
  Value fresh;
  fresh.instruction = instruction;
  fresh.producer = instruction;
  fresh.origin = origin;
  fresh.buffer = buffer;
  fresh.def = def;
  fresh.generation = generation;
  fresh.cost = cost;
  const int index = static_cast<int>(s.values.size());
  s.values.push_back(std::move(fresh));
  s.value_of[instruction] = index;
  s.versions[origin].push_back(index);
  s.values_by_def[def].push_back(index);
  s.current->new_values.push_back(index);
  return index;
}

// Keeps `reader` before whatever overwrites the buffers of `read`.
void GuardReads(PlannerState& s, HloInstruction* reader,
                const HloInstruction* read) {
  for (int k : s.BuffersOf(read)) {
    HloInstruction* writer = s.liveness->buffer(k).writer;
    if (writer != nullptr && writer != reader) {
      s.guards.push_back({reader, writer});
    }
  }
}

// Clones value `index` at slot u, reading the clones of `chain` where it
// reads their originals; sets the clone's value and returns what provides it.
absl::StatusOr<HloInstruction*> PlaceClone(
    PlannerState& s, int index, int u,
    const absl::flat_hash_map<const HloInstruction*, HloInstruction*>& chain,
    int& fresh_index) {
  const Value original = s.values[index];  // copy: s.values grows below
  const int64_t size = s.liveness->Size(original.buffer);
  HloInstruction* clone =
      s.computation->AddInstruction(original.producer->Clone("remat"));
  for (HloInstruction* pred : original.producer->control_predecessors()) {
    TF_RETURN_IF_ERROR(pred->AddControlDependencyTo(clone));
  }
  const int buffer = s.liveness->AddBuffer(size, u, u, /*live_to_end=*/false);
  s.liveness->AddMemory(u, u, size);
  s.clones_at_slot[u].push_back(clone);
  s.current->new_instructions.push_back(clone);
  ++s.result.instructions_added;
  // An element is re-extracted from the clone; its other outputs are only
  // the clone's transient (CountChainTransient).
  HloInstruction* provider = clone;
  if (original.tuple_index >= 0) {
    provider = s.computation->AddInstruction(
        HloInstruction::CreateGetTupleElement(
            clone->shape().tuple_shapes(original.tuple_index), clone,
            original.tuple_index),
        absl::StrCat(original.origin->name(), ".remat"));
    s.clones_at_slot[u].push_back(provider);
    s.current->new_instructions.push_back(provider);
    ++s.result.instructions_added;
  }
  s.extra_sources[provider] = {buffer};
  fresh_index = RegisterValue(s, provider, original.origin, buffer, u,
                              original.generation + 1, original.cost);
  s.values[fresh_index].producer = clone;
  s.values[fresh_index].flops = original.flops;
  s.values[fresh_index].tuple_index = original.tuple_index;
  s.values[fresh_index].transient = original.transient;

  // Operands: a clone of the same chain, or the version of the value that
  // lives longest, held until the clone runs.
  for (int64_t k = 0; k < clone->operand_count(); ++k) {
    HloInstruction* operand = clone->mutable_operand(k);
    HloInstruction* chosen = ChooseOperand(s, operand, u);
    auto link = chain.find(chosen);
    if (link != chain.end()) {
      TF_RETURN_IF_ERROR(clone->ReplaceOperandWith(k, link->second));
      const Value& link_value = s.values[s.value_of[link->second]];
      s.values[s.value_of[link->second]].uses.push_back(
          {clone, k, link->second, u});
      s.liveness->AddRead(link_value.buffer, u);
      continue;
    }
    if (chosen != operand) {
      TF_RETURN_IF_ERROR(clone->ReplaceOperandWith(k, chosen));
    }
    auto vit = s.value_of.find(chosen);
    if (vit != s.value_of.end()) {
      s.values[vit->second].uses.push_back({clone, k, chosen, u});
      s.current->operand_values.push_back(vit->second);
      if (s.values[vit->second].def < s.current_p) Activate(s, vit->second);
    }
    GuardReads(s, clone, chosen);
    for (int kb : s.BuffersOf(chosen)) {
      if (s.liveness->Size(kb) == 0 || s.liveness->buffer(kb).live_to_end) {
        continue;
      }
      s.liveness->Touch(kb);
      s.liveness->AddRead(kb, u);
    }
  }
  s.pins.push_back({clone, s.current_p});
  return provider;
}

HloInstruction* PlaceCopy(PlannerState& s, HloInstruction* source,
                          const Shape& shape, int slot, int& buffer) {
  HloInstruction* copy = s.computation->AddInstruction(
      HloInstruction::CreateUnary(shape, HloOpcode::kCopy, source));
  GuardReads(s, copy, source);
  for (int k : s.BuffersOf(source)) {
    s.liveness->Touch(k);
    s.liveness->AddRead(k, slot);
  }
  const int64_t size = s.size_fn(shape);
  buffer = s.liveness->AddBuffer(size, slot, slot, /*live_to_end=*/false);
  s.liveness->AddMemory(slot, slot, size);
  s.extra_sources[copy] = {buffer};
  s.clones_at_slot[slot].push_back(copy);
  s.current->new_instructions.push_back(copy);
  ++s.result.instructions_added;
  return copy;
}

// Points the uses of `original` after p at `replacement` (value
// `fresh_index`, placed at u); the original dies if no use is left.
absl::Status RedirectLateUses(PlannerState& s, int original,
                              HloInstruction* replacement, int fresh_index,
                              int p, int u) {
  const std::vector<Use> uses = s.values[original].uses;
  HloInstruction* read = s.values[original].instruction;
  const int b = s.values[original].buffer;
  const int fresh_buffer = s.values[fresh_index].buffer;
  std::vector<Use> early;
  for (const Use& use : uses) {
    if (use.pos <= p) {
      early.push_back(use);
      continue;
    }
    // Another get-tuple-element of the same element reads what `read` does.
    HloInstruction* target =
        use.via == read || use.via->opcode() != HloOpcode::kBitcast
            ? replacement
            : BitcastOf(s, replacement, use.via->shape(), u);
    s.current->redirects.push_back(
        {use.user, use.operand_no, use.user->mutable_operand(use.operand_no)});
    TF_RETURN_IF_ERROR(use.user->ReplaceOperandWith(use.operand_no, target));
    s.values[fresh_index].uses.push_back(
        {use.user, use.operand_no, target, use.pos});
    s.liveness->AddRead(fresh_buffer, use.pos);
    s.liveness->RemoveRead(b, use.pos);
  }
  Value& v = s.values[original];
  v.uses = std::move(early);
  if (!v.uses.empty()) return absl::OkStatus();
  v.dead = true;
  const HloInstruction* producer = v.producer;
  const int def = v.def;
  if (v.tuple_index < 0) {
    // No use left before the trigger point: the producer goes away, and
    // with it its reads of its own operands.
    for (const HloInstruction* operand : producer->unique_operands()) {
      for (int k : s.BuffersOf(operand)) s.liveness->RemoveRead(k, def);
    }
    s.liveness->AddMemory(def, s.liveness->End(b), -s.liveness->Size(b));
    s.liveness->SetEnd(b, def);
    s.liveness->Free(b);
    return absl::OkStatus();
  }
  // An element: the producer may still run for its other outputs, and
  // writes this one too, which dies at once.
  if (s.liveness->End(b) > def) {
    s.liveness->AddMemory(def + 1, s.liveness->End(b), -s.liveness->Size(b));
  }
  s.liveness->SetEnd(b, def);
  s.liveness->Free(b);
  if (!s.ProducerUnused(producer)) return absl::OkStatus();
  for (const HloInstruction* operand : producer->unique_operands()) {
    for (int k : s.BuffersOf(operand)) s.liveness->RemoveRead(k, def);
  }
  // The moves that killed the other elements cannot be undone alone now.
  for (const HloInstruction* user : producer->users()) {
    auto it = s.value_of.find(user);
    if (it != s.value_of.end()) s.liveness->Touch(s.values[it->second].buffer);
  }
  return absl::OkStatus();
}

// The memory at u while the values `fresh` (clones placed there, operands
// first) are computed one after another.
void CountChainTransient(PlannerState& s, const std::vector<int>& fresh,
                         int u) {
  // The clones of a chain run one after another at slot u and each
  // intermediate dies once its last reader in the chain has run: slot u
  // holds the chain's own peak for a moment, not the sum of its values. A
  // clone's transient outputs (scratch, workspace) live only while it runs.
  const int count = static_cast<int>(fresh.size());
  absl::flat_hash_map<const HloInstruction*, int> index;
  for (int i = 0; i < count; ++i) index[s.values[fresh[i]].instruction] = i;
  std::vector<int> last_reader(count, -1);
  for (int i = 0; i < count; ++i) {
    for (const HloInstruction* operand :
         s.values[fresh[i]].producer->operands()) {
      auto it = index.find(operand);
      if (it != index.end()) last_reader[it->second] = i;
    }
  }
  auto size_of = [&](int i) {
    return s.liveness->Size(s.values[fresh[i]].buffer);
  };
  int64_t live = 0, peak = 0, intermediates = 0;
  for (int i = 0; i < count; ++i) {
    live += size_of(i);
    peak = std::max(peak, live + s.values[fresh[i]].transient);
    for (int j = 0; j < i; ++j) {
      if (last_reader[j] == i) live -= size_of(j);
    }
  }
  // Before the chain's peak the instruction at u has not yet allocated its
  // own outputs; after it, only the chain's last value is left.
  const int root = count - 1;
  for (int i = 0; i < root; ++i) intermediates += size_of(i);
  s.liveness->AddMemory(
      u, u,
      std::max<int64_t>(0, peak - s.defined_bytes[u] - size_of(root)) -
          intermediates);
}

// Drops their control edges and removes them, users first.
absl::Status RemoveInstructions(
    HloComputation* computation,
    absl::flat_hash_set<const HloInstruction*> doomed) {
  for (const HloInstruction* instruction : doomed) {
    TF_RETURN_IF_ERROR(
        const_cast<HloInstruction*>(instruction)->DropAllControlDeps());
  }
  // Users before their operands.
  while (!doomed.empty()) {
    std::vector<const HloInstruction*> ready;
    for (const HloInstruction* instruction : doomed) {
      if (instruction->user_count() == 0) ready.push_back(instruction);
    }
    if (ready.empty()) {
      return absl::InternalError(
          "rematerialization: an instruction to remove still has users");
    }
    for (const HloInstruction* instruction : ready) {
      doomed.erase(instruction);
      TF_RETURN_IF_ERROR(computation->RemoveInstruction(
          const_cast<HloInstruction*>(instruction)));
    }
  }
  return absl::OkStatus();
}

FinalOrder ComputeFinalOrder(const PlannerState& s) {
  // Instructions of moves taken back are gone (or about to be): they may be
  // the last users of a producer that is dead otherwise.
  auto readers = [&](const HloInstruction* instruction) {
    std::vector<const HloInstruction*> out;
    for (const HloInstruction* user : instruction->users()) {
      if (!s.removed.contains(user)) out.push_back(user);
    }
    return out;
  };
  // A producer whose every use moved to a clone dies, with the bitcasts of
  // it that nobody reads any more.
  const HloInstruction* root = s.computation->root_instruction();
  FinalOrder order;
  absl::flat_hash_set<const HloInstruction*>& dead = order.dead;
  for (const Value& v : s.values) {
    if (!v.dead || s.removed.contains(v.instruction) || v.instruction == root) {
      continue;
    }
    std::vector<const HloInstruction*> group = {v.instruction};
    if (v.tuple_index >= 0) {
      // Every get-tuple-element of the element.
      group.clear();
      for (const HloInstruction* user : readers(v.producer)) {
        if (user->opcode() == HloOpcode::kGetTupleElement &&
            user->tuple_index() == v.tuple_index && user != root) {
          group.push_back(user);
        }
      }
    }
    bool unused = true;
    for (size_t i = 0; i < group.size() && unused; ++i) {
      for (const HloInstruction* user : readers(group[i])) {
        if (user->opcode() == HloOpcode::kBitcast &&
            user != s.computation->root_instruction()) {
          group.push_back(user);
        } else {
          unused = false;
        }
      }
    }
    if (unused) dead.insert(group.begin(), group.end());
  }
  // A multi-output producer goes once none of its outputs is read.
  for (const Value& v : s.values) {
    if (v.tuple_index < 0 || !v.dead || s.removed.contains(v.producer) ||
        dead.contains(v.producer) || v.producer == root) {
      continue;
    }
    std::vector<const HloInstruction*> unread;
    bool unused = true;
    for (const HloInstruction* user : readers(v.producer)) {
      if (dead.contains(user)) continue;
      if (user->opcode() == HloOpcode::kGetTupleElement &&
          readers(user).empty() && user != root) {
        unread.push_back(user);
        continue;
      }
      unused = false;
    }
    if (!unused) continue;
    dead.insert(unread.begin(), unread.end());
    dead.insert(v.producer);
  }
  HloInstructionSequence& sequence = order.sequence;
  absl::flat_hash_set<const HloInstruction*> placed;
  for (int slot = 0; slot < s.n; ++slot) {
    // Instructions added at one slot may read each other: operands first.
    const std::vector<HloInstruction*>& group = s.clones_at_slot[slot];
    absl::flat_hash_set<const HloInstruction*> in_group(group.begin(),
                                                        group.end());
    std::vector<std::pair<HloInstruction*, size_t>> stack;
    for (HloInstruction* start : group) {
      if (placed.contains(start) || dead.contains(start) ||
          s.removed.contains(start)) {
        continue;
      }
      stack.push_back({start, 0});
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (next < static_cast<size_t>(node->operand_count())) {
          HloInstruction* operand = node->mutable_operand(next++);
          if (in_group.contains(operand) && !placed.contains(operand)) {
            stack.push_back({operand, 0});
          }
          continue;
        }
        if (placed.insert(node).second) sequence.push_back(node);
        stack.pop_back();
      }
    }
    HloInstruction* original = s.sequence[slot];
    if (!dead.contains(original)) sequence.push_back(original);
  }
  return order;
}

}  // namespace

absl::Status ApplyMove(PlannerState& s, const Candidate& candidate, int p) {
  const int u = candidate.first_late;
  s.moves.emplace_back();
  s.current = &s.moves.back();
  s.liveness->BeginMove(static_cast<int>(s.moves.size()) - 1,
                        &s.current->liveness);
  s.current->kind = candidate.kind;
  s.current->original = candidate.value;
  s.current->original_uses = s.values[candidate.value].uses;
  s.current->original_dead = s.values[candidate.value].dead;
  s.current->bytes_saved = candidate.gain;
  s.current->cost = candidate.cost;
  s.current->flops = candidate.flops;
  // Touch the moved buffer first so that its old toucher is restored on undo.
  s.liveness->Touch(s.values[candidate.value].buffer);

  HloInstruction* provider = nullptr;
  if (candidate.kind == MoveKind::kRecompute) {
    absl::flat_hash_map<const HloInstruction*, HloInstruction*> chain;
    std::vector<int> fresh_values;
    bool transient = false;
    int fresh = -1;
    for (int member : candidate.chain) {
      TF_ASSIGN_OR_RETURN(provider, PlaceClone(s, member, u, chain, fresh));
      chain[s.values[member].instruction] = provider;
      fresh_values.push_back(fresh);
      transient |= s.values[fresh].transient > 0;
    }
    if (fresh_values.size() > 1 || transient) {
      CountChainTransient(s, fresh_values, u);
    }
    TF_RETURN_IF_ERROR(
        RedirectLateUses(s, candidate.value, provider, fresh, p, u));
    s.current->clones = static_cast<int>(candidate.chain.size());
    s.result.recomputed += s.current->clones;
  } else {
    HloInstruction* producer = s.values[candidate.value].instruction;
    int compact_buffer = -1, expand_buffer = -1;
    HloInstruction* compact =
        PlaceCopy(s, producer, *candidate.compact, candidate.compress_slot,
                  compact_buffer);
    s.values[candidate.value].uses.push_back(
        {compact, 0, producer, candidate.compress_slot});
    provider = PlaceCopy(s, compact, producer->shape(), u, expand_buffer);
    const int fresh = RegisterValue(s, provider, provider, expand_buffer, u,
                                    s.values[candidate.value].generation + 1,
                                    CopyCost(s.liveness->Size(expand_buffer),
                                             s.liveness->Size(compact_buffer)));
    s.pins.push_back({provider, p});
    TF_RETURN_IF_ERROR(
        RedirectLateUses(s, candidate.value, provider, fresh, p, u));
    ++s.result.compressed;
  }

  RematDecision d;
  d.action = candidate.kind == MoveKind::kRecompute ? RematAction::kRecompute
                                                    : RematAction::kCompress;
  d.value = std::string(s.values[candidate.value].producer->name());
  d.result = std::string(provider->name());
  d.at = std::string(s.sequence[p]->name());
  d.before = std::string(s.sequence[u]->name());
  for (const HloInstruction* added : s.current->new_instructions) {
    d.instructions.push_back(std::string(added->name()));
  }
  d.bytes_saved = candidate.gain;
  d.cost = candidate.cost;
  s.current->decision = static_cast<int>(s.result.decisions.size());
  s.result.decisions.push_back(std::move(d));
  s.current = nullptr;
  s.liveness->EndMove();
  return absl::OkStatus();
}

absl::Status RevertMove(PlannerState& s, AppliedMove& move) {
  s.liveness->Revert(move.liveness);
  for (auto it = move.redirects.rbegin(); it != move.redirects.rend(); ++it) {
    TF_RETURN_IF_ERROR(
        it->user->ReplaceOperandWith(it->operand_no, it->old_operand));
  }
  Value& original = s.values[move.original];
  original.uses = move.original_uses;
  original.dead = move.original_dead;
  const absl::flat_hash_set<const HloInstruction*> added(
      move.new_instructions.begin(), move.new_instructions.end());
  for (int index : move.new_values) {
    s.values[index].dead = true;
    s.values[index].uses.clear();
    // A value taken back never comes back: ChooseOperand need not see it
    // again (retried plans would otherwise pile up dead versions).
    auto vit = s.versions.find(s.values[index].origin);
    if (vit != s.versions.end()) {
      std::vector<int>& list = vit->second;
      list.erase(std::remove(list.begin(), list.end(), index), list.end());
    }
  }
  for (int index : move.operand_values) {
    std::vector<Use>& uses = s.values[index].uses;
    uses.erase(std::remove_if(
                   uses.begin(), uses.end(),
                   [&](const Use& use) { return added.contains(use.user); }),
               uses.end());
  }
  for (auto it = s.bitcasts.begin(); it != s.bitcasts.end();) {
    if (added.contains(it->second)) {
      s.bitcasts.erase(it++);
    } else {
      ++it;
    }
  }
  s.removed.insert(added.begin(), added.end());
  s.result.instructions_added -= static_cast<int>(move.new_instructions.size());
  s.result.recomputed -= move.clones;
  if (move.kind == MoveKind::kCompress) --s.result.compressed;
  move.undone = true;
  return absl::OkStatus();
}

// The instructions of moves taken back still in the computation.
absl::flat_hash_set<const HloInstruction*> TakenBackPresent(
    const PlannerState& s) {
  absl::flat_hash_set<const HloInstruction*> present;
  for (const HloInstruction* instruction : s.removed) {
    if (!s.dropped.contains(instruction)) present.insert(instruction);
  }
  return present;
}

absl::Status DropTakenBack(PlannerState& s) {
  absl::flat_hash_set<const HloInstruction*> present = TakenBackPresent(s);
  if (present.empty()) return absl::OkStatus();
  s.dropped.insert(present.begin(), present.end());
  TF_RETURN_IF_ERROR(RemoveInstructions(s.computation, std::move(present)));
  return s.module->RemoveUnusedComputations();
}

absl::StatusOr<std::unique_ptr<HloModule>> PlannedCopy(PlannerState& s) {
  const FinalOrder order = ComputeFinalOrder(s);
  // Cloning verifies the schedule, which must name every instruction: the
  // planned order, then what is about to go (users last). Materialize sets
  // the real order.
  HloInstructionSequence everything = order.sequence;
  for (HloInstruction* instruction :
       s.computation->MakeInstructionPostOrder()) {
    if (s.removed.contains(instruction) || order.dead.contains(instruction)) {
      everything.push_back(instruction);
    }
  }
  s.module->schedule().set_sequence(s.computation, std::move(everything));
  // Clone("") keeps every name, which is how instructions are found again.
  std::unique_ptr<HloModule> copy = s.module->Clone("");
  HloComputation* computation =
      copy->GetComputationWithName(s.computation->name());
  if (computation == nullptr) {
    return absl::InternalError(absl::StrCat(
        "rematerialization: the planned copy lost ", s.computation->name()));
  }
  absl::flat_hash_map<absl::string_view, HloInstruction*> by_name;
  for (HloInstruction* instruction : computation->instructions()) {
    by_name[instruction->name()] = instruction;
  }
  auto find =
      [&](const HloInstruction* original) -> absl::StatusOr<HloInstruction*> {
    auto it = by_name.find(original->name());
    if (it == by_name.end()) {
      return absl::InternalError(absl::StrCat(
          "rematerialization: ", original->name(), " is not in the copy"));
    }
    return it->second;
  };
  absl::flat_hash_set<const HloInstruction*> doomed;
  for (const HloInstruction* instruction : TakenBackPresent(s)) {
    TF_ASSIGN_OR_RETURN(HloInstruction * in_copy, find(instruction));
    doomed.insert(in_copy);
  }
  for (const HloInstruction* instruction : order.dead) {
    TF_ASSIGN_OR_RETURN(HloInstruction * in_copy, find(instruction));
    doomed.insert(in_copy);
  }
  TF_RETURN_IF_ERROR(RemoveInstructions(computation, std::move(doomed)));
  HloInstructionSequence sequence;
  for (HloInstruction* instruction : order.sequence.instructions()) {
    TF_ASSIGN_OR_RETURN(HloInstruction * in_copy, find(instruction));
    sequence.push_back(in_copy);
  }
  copy->schedule().set_sequence(computation, std::move(sequence));
  return copy;
}

absl::StatusOr<PlannerResult> Materialize(PlannerState& s) {
  TF_RETURN_IF_ERROR(RemoveInstructions(s.computation, TakenBackPresent(s)));
  FinalOrder order = ComputeFinalOrder(s);
  const absl::flat_hash_set<const HloInstruction*>& dead = order.dead;
  s.result.instructions_removed = static_cast<int>(dead.size());
  TF_RETURN_IF_ERROR(RemoveInstructions(s.computation, dead));
  s.module->schedule().set_sequence(s.computation, std::move(order.sequence));

  // Keep each clone after the point whose memory it relieves, so that a later
  // scheduler cannot hoist it back next to the original (jax PR #2391).
  for (const auto& [clone, trigger] : s.pins) {
    HloInstruction* anchor = s.sequence[trigger];
    if (s.removed.contains(clone) || dead.contains(clone) ||
        dead.contains(anchor)) {
      continue;
    }
    if (anchor->opcode() == HloOpcode::kParameter ||
        anchor->opcode() == HloOpcode::kConstant) {
      continue;
    }
    TF_RETURN_IF_ERROR(anchor->AddControlDependencyTo(clone));
    ++s.result.pinned;
  }
  for (const auto& [reader, writer] : s.guards) {
    if (s.removed.contains(reader) || dead.contains(reader) ||
        dead.contains(writer)) {
      continue;
    }
    TF_RETURN_IF_ERROR(reader->AddControlDependencyTo(writer));
  }
  // Fusion clones brought their own fused computations; those of clones
  // taken back (or of producers that died) are unreachable now.
  if (!s.removed.empty() || !dead.empty()) {
    TF_RETURN_IF_ERROR(s.module->RemoveUnusedComputations());
  }
  for (const AppliedMove& move : s.moves) {
    if (!move.undone) s.result.extra_flops += move.flops;
  }
  return s.result;
}

}  // namespace remat
}  // namespace xla
