#include "xla/service/remat/planner_edits.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/cleanup/cleanup.h"
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
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/planner_scoring.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/remat_decision.h"
#include "xla/shape.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

namespace {

HloInstruction* BitcastOf(PlannerState& state, HloInstruction* clone,
                          const Shape& shape, int slot) {
  const std::string shape_text = ShapeUtil::HumanStringWithLayout(shape);
  if (HloInstruction* known =
          state.moves().FindBitcast(clone, shape_text, slot)) {
    return known;
  }
  HloInstruction* bitcast = state.computation()->AddInstruction(
      HloInstruction::CreateBitcast(shape, clone));
  state.moves().RememberBitcast(clone, shape_text, slot, bitcast);
  state.SetBuffersOf(bitcast, state.BuffersOf(clone));
  state.values().AddReader(bitcast, state.values().IndexOf(clone));
  state.Place(bitcast, slot);
  return bitcast;
}

// Adds `value`, read as `provider`, as a new value of the current move.
int RegisterValue(PlannerState& state, Value value, HloInstruction* provider) {
  const int index = state.values().Add(std::move(value), {provider});
  state.moves().current()->new_values.push_back(index);
  return index;
}

// Keeps `reader` before whatever overwrites the buffers of `read`.
void GuardReads(PlannerState& state, HloInstruction* reader,
                const HloInstruction* read) {
  for (int buffer : state.BuffersOf(read)) {
    HloInstruction* writer = state.liveness().buffer(buffer).writer;
    if (writer != nullptr && writer != reader) {
      state.moves().Guard(reader, writer);
    }
  }
}

// What PlaceClone placed: the instruction that provides the value, and the
// value's index.
struct PlacedClone {
  HloInstruction* provider;
  int value;
};

// Versions of values, by what a clone would read, and the clone at the
// move's slot to read instead.
using CloneMap = absl::flat_hash_map<const HloInstruction*, HloInstruction*>;

// Operand `operand_no` of `clone` (placed at `late_slot`) reads a clone of
// the same chain, a clone an earlier move placed at the same slot
// (`placed`), or the version of its value that lives longest, held until the
// clone runs.
absl::Status ReadOperand(PlannerState& state, HloInstruction* clone,
                         int64_t operand_no, int late_slot,
                         const CloneMap& chain, const CloneMap& placed) {
  ValueTable& values = state.values();
  LivenessModel& liveness = state.liveness();
  HloInstruction* operand = clone->mutable_operand(operand_no);
  HloInstruction* chosen = ChooseOperand(state, operand, late_slot);
  // Versions and chain links are keyed by their values' instructions.
  auto value_key = [&](const HloInstruction* read) -> const HloInstruction* {
    const int index = values.IndexOf(read);
    return index >= 0 ? values[index].instruction : read;
  };
  if (auto earlier = placed.find(value_key(chosen)); earlier != placed.end()) {
    chosen = earlier->second;
  }
  // A link of the chain is read as its clone, through a bitcast of it
  // where the original was read through one.
  auto link = chain.find(value_key(chosen));
  if (link != chain.end()) {
    HloInstruction* read = link->second;
    if (!ShapeUtil::Equal(read->shape(), operand->shape())) {
      read = BitcastOf(state, read, operand->shape(), late_slot);
    }
    TF_RETURN_IF_ERROR(clone->ReplaceOperandWith(operand_no, read));
    const int link_value = values.IndexOf(link->second);
    values.AddUse(link_value, {clone, operand_no, read, late_slot});
    liveness.AddRead(values[link_value].buffer, late_slot);
    return absl::OkStatus();
  }
  // Another version than the one `operand` bitcasts: a bitcast of it.
  if (!ShapeUtil::Equal(chosen->shape(), operand->shape())) {
    chosen = BitcastOf(state, chosen, operand->shape(), late_slot);
  }
  if (chosen != operand) {
    TF_RETURN_IF_ERROR(clone->ReplaceOperandWith(operand_no, chosen));
  }
  const int read = values.IndexOf(chosen);
  if (read >= 0) {
    values.AddUse(read, {clone, operand_no, chosen, late_slot});
    state.moves().current()->operand_values.push_back(read);
    if (values[read].def < state.sweep_slot()) values.Activate(read);
  }
  GuardReads(state, clone, chosen);
  for (int buffer : state.BuffersOf(chosen)) {
    if (liveness.Size(buffer) == 0 || liveness.buffer(buffer).live_to_end) {
      continue;
    }
    liveness.Touch(buffer);
    liveness.AddRead(buffer, late_slot);
  }
  return absl::OkStatus();
}

// The value `original` gets from `clone`, placed at `late_slot`: the clone
// itself, or its element re-extracted (the clone's other outputs are its
// transient, CountChainTransient, unless served as siblings). A new value of
// the current move, read nowhere yet.
PlacedClone ProvideFromClone(PlannerState& state, const Value& original,
                             HloInstruction* clone, int late_slot) {
  HloInstruction* provider = clone;
  if (original.tuple_index >= 0) {
    provider = state.computation()->AddInstruction(
        HloInstruction::CreateGetTupleElement(
            clone->shape().tuple_shapes(original.tuple_index), clone,
            original.tuple_index),
        absl::StrCat(original.origin->name(), ".remat"));
    state.Place(provider, late_slot);
  }
  LivenessModel& liveness = state.liveness();
  const int64_t size = liveness.Size(original.buffer);
  const int buffer =
      liveness.AddBuffer(size, late_slot, late_slot, /*live_to_end=*/false);
  liveness.AddMemory(late_slot, late_slot, size);
  state.SetBuffersOf(provider, {buffer});
  Value fresh;
  fresh.instruction = provider;
  fresh.producer = clone;
  fresh.tuple_index = original.tuple_index;
  fresh.transient = original.transient;
  fresh.origin = original.origin;
  fresh.buffer = buffer;
  fresh.def = late_slot;
  fresh.generation = original.generation + 1;
  fresh.cost = original.cost;
  fresh.flops = original.flops;
  return PlacedClone{provider,
                     RegisterValue(state, std::move(fresh), provider)};
}

// Clones value `index` at `late_slot`, reading the clones of `chain` where it
// reads their originals.
absl::StatusOr<PlacedClone> PlaceClone(PlannerState& state, int index,
                                       int late_slot, const CloneMap& chain,
                                       const CloneMap& placed) {
  const Value original = state.values()[index];  // copy: the table grows
  HloInstruction* clone = state.computation()->AddInstruction(
      state.recycler().Clone(*original.producer, state.module(), "remat"));
  for (HloInstruction* predecessor :
       original.producer->control_predecessors()) {
    TF_RETURN_IF_ERROR(predecessor->AddControlDependencyTo(clone));
  }
  state.Place(clone, late_slot);
  const PlacedClone provided =
      ProvideFromClone(state, original, clone, late_slot);
  for (int64_t operand_no = 0; operand_no < clone->operand_count();
       ++operand_no) {
    TF_RETURN_IF_ERROR(
        ReadOperand(state, clone, operand_no, late_slot, chain, placed));
  }
  state.moves().Pin(clone, state.sweep_slot());
  return provided;
}

// A copy PlaceCopy placed, and the buffer it defines.
struct PlacedCopy {
  HloInstruction* copy;
  int buffer;
};

PlacedCopy PlaceCopy(PlannerState& state, HloInstruction* source,
                     const Shape& shape, int slot) {
  HloInstruction* copy = state.computation()->AddInstruction(
      HloInstruction::CreateUnary(shape, HloOpcode::kCopy, source));
  GuardReads(state, copy, source);
  LivenessModel& liveness = state.liveness();
  for (int read : state.BuffersOf(source)) {
    liveness.Touch(read);
    liveness.AddRead(read, slot);
  }
  const int64_t size = state.size_fn()(shape);
  const int buffer =
      liveness.AddBuffer(size, slot, slot, /*live_to_end=*/false);
  liveness.AddMemory(slot, slot, size);
  state.SetBuffersOf(copy, {buffer});
  state.Place(copy, slot);
  return PlacedCopy{copy, buffer};
}

// Value `original` lost its last use: its buffer is freed where it is
// defined, and its producer too when nothing else of it is read.
void ReleaseDeadValue(PlannerState& state, int original) {
  const Value& value = state.values()[original];
  LivenessModel& liveness = state.liveness();
  const HloInstruction* producer = value.producer;
  const int def = value.def;
  const int buffer = value.buffer;
  if (value.tuple_index < 0) {
    // No use left before the trigger point: the producer goes away, and
    // with it its reads of its own operands.
    for (const HloInstruction* operand : producer->unique_operands()) {
      for (int read : state.BuffersOf(operand)) liveness.RemoveRead(read, def);
    }
    liveness.AddMemory(def, liveness.End(buffer), -liveness.Size(buffer));
    liveness.SetEnd(buffer, def);
    liveness.Free(buffer);
    return;
  }
  // An element: the producer may still run for its other outputs, and
  // writes this one too, which dies at once.
  if (liveness.End(buffer) > def) {
    liveness.AddMemory(def + 1, liveness.End(buffer), -liveness.Size(buffer));
  }
  liveness.SetEnd(buffer, def);
  liveness.Free(buffer);
  if (!state.ProducerUnused(producer)) return;
  for (const HloInstruction* operand : producer->unique_operands()) {
    for (int read : state.BuffersOf(operand)) liveness.RemoveRead(read, def);
  }
  // The moves that killed the other elements cannot be undone alone now.
  for (const HloInstruction* user : producer->users()) {
    const int element = state.values().IndexOf(user);
    if (element >= 0) liveness.Touch(state.values()[element].buffer);
  }
}

// Points the uses of `original` after `slot` at `replacement` (value
// `fresh_index`, placed at `late_slot`); the original dies if no use is left.
absl::Status RedirectLateUses(PlannerState& state, int original,
                              HloInstruction* replacement, int fresh_index,
                              int slot, int late_slot) {
  ValueTable& values = state.values();
  LivenessModel& liveness = state.liveness();
  const std::vector<Use> uses = values[original].uses;
  HloInstruction* read = values[original].instruction;
  const int buffer = values[original].buffer;
  const int fresh_buffer = values[fresh_index].buffer;
  std::vector<Use> early;
  for (const Use& use : uses) {
    if (use.slot <= slot) {
      early.push_back(use);
      continue;
    }
    // Another get-tuple-element of the same element reads what `read` does.
    HloInstruction* target =
        use.via == read || use.via->opcode() != HloOpcode::kBitcast
            ? replacement
            : BitcastOf(state, replacement, use.via->shape(), late_slot);
    state.moves().current()->redirects.push_back(
        {use.user, use.operand_no, use.user->mutable_operand(use.operand_no)});
    TF_RETURN_IF_ERROR(use.user->ReplaceOperandWith(use.operand_no, target));
    values.AddUse(fresh_index, {use.user, use.operand_no, target, use.slot});
    liveness.AddRead(fresh_buffer, use.slot);
    liveness.RemoveRead(buffer, use.slot);
  }
  if (values.KeepUses(original, std::move(early))) {
    ReleaseDeadValue(state, original);
  }
  return absl::OkStatus();
}

// The memory at `late_slot` while the values `fresh` (clones placed there,
// operands first) are computed one after another; the last `survivors` of
// them are read after the slot, the others die in it.
void CountChainTransient(PlannerState& state, const std::vector<int>& fresh,
                         int survivors, int late_slot) {
  // The clones of a chain run one after another at late_slot and each
  // intermediate dies once its last reader in the chain has run: the slot
  // holds the chain's own peak for a moment, not the sum of its values. A
  // clone's transient outputs (scratch, workspace) live only while it runs.
  const ValueTable& values = state.values();
  const int count = static_cast<int>(fresh.size());
  // By value: a clone may read another through a bitcast.
  absl::flat_hash_map<int, int> position;
  for (int i = 0; i < count; ++i) position[fresh[i]] = i;
  std::vector<int> last_reader(count, -1);
  for (int i = 0; i < count; ++i) {
    for (const HloInstruction* operand :
         values[fresh[i]].producer->operands()) {
      auto it = position.find(values.IndexOf(operand));
      if (it != position.end()) last_reader[it->second] = i;
    }
  }
  auto size_of = [&](int i) {
    return state.liveness().Size(values[fresh[i]].buffer);
  };
  // Elements of one clone served apart (siblings) are values of their own
  // here, not its transient.
  std::vector<int64_t> transient(count);
  for (int i = 0; i < count; ++i) {
    transient[i] = values[fresh[i]].transient;
    for (int j = 0; j < count; ++j) {
      if (j != i && values[fresh[j]].producer == values[fresh[i]].producer) {
        transient[i] -= size_of(j);
      }
    }
  }
  int64_t live = 0, peak = 0, intermediates = 0;
  for (int i = 0; i < count; ++i) {
    live += size_of(i);
    peak = std::max(peak, live + std::max<int64_t>(0, transient[i]));
    for (int j = 0; j < i; ++j) {
      if (last_reader[j] == i) live -= size_of(j);
    }
  }
  // Before the chain's peak the instruction at late_slot has not yet
  // allocated its own outputs; after it, only the survivors are left.
  const int first_survivor = count - survivors;
  int64_t survivor_bytes = 0;
  for (int i = 0; i < count; ++i) {
    (i < first_survivor ? intermediates : survivor_bytes) += size_of(i);
  }
  state.liveness().AddMemory(
      late_slot, late_slot,
      std::max<int64_t>(
          0, peak - state.defined_bytes(late_slot) - survivor_bytes) -
          intermediates);
}

// Drops their control edges and removes them, users first. The fused
// computations of removed clones go back to `recycler` (when given).
absl::Status RemoveInstructions(
    HloComputation* computation,
    absl::flat_hash_set<const HloInstruction*> doomed,
    FusedComputationRecycler* recycler = nullptr) {
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
      HloComputation* fused =
          instruction->opcode() == HloOpcode::kFusion
              ? instruction->fused_instructions_computation()
              : nullptr;
      TF_RETURN_IF_ERROR(computation->RemoveInstruction(
          const_cast<HloInstruction*>(instruction)));
      if (recycler != nullptr && fused != nullptr) recycler->Release(fused);
    }
  }
  return absl::OkStatus();
}

// Whether removing `instruction` once nothing reads it changes nothing but
// the memory and the time: no parameter, the root, side effect or ordering
// edge.
bool RemovableOnceUnread(const HloInstruction& instruction,
                         const HloInstruction* root) {
  return &instruction != root &&
         instruction.opcode() != HloOpcode::kParameter &&
         !instruction.HasSideEffect() &&
         instruction.control_predecessors().empty() &&
         instruction.control_successors().empty();
}

// The instructions the plan leaves without a reader: producers no use is
// left for, with the bitcasts and get-tuple-elements of them nobody reads,
// and what only those read.
absl::flat_hash_set<const HloInstruction*> UnreadInstructions(
    const PlannerState& state) {
  const MoveLog::InstructionSet& taken_back = state.moves().taken_back();
  // Instructions of moves taken back are gone (or about to be): they may be
  // the last users of a producer that is dead otherwise.
  auto readers = [&](const HloInstruction* instruction) {
    std::vector<const HloInstruction*> out;
    for (const HloInstruction* user : instruction->users()) {
      if (!taken_back.contains(user)) out.push_back(user);
    }
    return out;
  };
  // A producer whose every use moved to a clone dies, with the bitcasts of
  // it that nobody reads any more.
  const HloInstruction* root = state.computation()->root_instruction();
  absl::flat_hash_set<const HloInstruction*> dead;
  for (const Value& v : state.values().all()) {
    if (!v.dead || taken_back.contains(v.instruction) ||
        v.instruction == root) {
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
            user != state.computation()->root_instruction()) {
          group.push_back(user);
        } else {
          unused = false;
        }
      }
    }
    if (unused) dead.insert(group.begin(), group.end());
  }
  // A multi-output producer goes once none of its outputs is read.
  for (const Value& v : state.values().all()) {
    if (v.tuple_index < 0 || !v.dead || taken_back.contains(v.producer) ||
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
  // What only they read goes too (a chain recomputed for every reader
  // leaves its whole original run unread), so that the judged module runs
  // what the written one does.
  std::vector<const HloInstruction*> work(dead.begin(), dead.end());
  while (!work.empty()) {
    const HloInstruction* gone = work.back();
    work.pop_back();
    for (const HloInstruction* operand : gone->operands()) {
      if (dead.contains(operand) || taken_back.contains(operand) ||
          !RemovableOnceUnread(*operand, root)) {
        continue;
      }
      const bool unread =
          absl::c_all_of(operand->users(), [&](const HloInstruction* user) {
            return dead.contains(user) || taken_back.contains(user);
          });
      if (unread) {
        dead.insert(operand);
        work.push_back(operand);
      }
    }
  }
  return dead;
}

// The FLOPs of the runs in `unread`: a value's producer as the table counts
// it (a clone carries its original's), anything else by the cost analysis.
double FlopsOfRuns(const PlannerState& state,
                   const absl::flat_hash_set<const HloInstruction*>& unread) {
  absl::flat_hash_map<const HloInstruction*, double> flops_of;
  for (const Value& v : state.values().all()) {
    if (unread.contains(v.producer)) flops_of[v.producer] = v.flops;
  }
  double flops = 0;
  for (const HloInstruction* instruction : unread) {
    auto known = flops_of.find(instruction);
    flops += known != flops_of.end()
                 ? known->second
                 : RecomputeFlops(state.costs(), *instruction);
  }
  return flops;
}

}  // namespace

FinalOrder ComputeFinalOrder(const PlannerState& state) {
  const MoveLog::InstructionSet& taken_back = state.moves().taken_back();
  FinalOrder order;
  order.dead = UnreadInstructions(state);
  const absl::flat_hash_set<const HloInstruction*>& dead = order.dead;
  HloInstructionSequence& sequence = order.sequence;
  absl::flat_hash_set<const HloInstruction*> placed;
  for (int slot = 0; slot < state.slot_count(); ++slot) {
    // Instructions added at one slot may read each other: operands first.
    absl::Span<HloInstruction* const> group = state.moves().PlacedAt(slot);
    absl::flat_hash_set<const HloInstruction*> in_group(group.begin(),
                                                        group.end());
    std::vector<std::pair<HloInstruction*, size_t>> stack;
    for (HloInstruction* start : group) {
      if (placed.contains(start) || dead.contains(start) ||
          taken_back.contains(start)) {
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
    HloInstruction* original = state.sequence()[slot];
    if (!dead.contains(original)) sequence.push_back(original);
  }
  return order;
}

double PlanExtraFlops(const PlannerState& state) {
  return state.moves().KeptFlops() -
         FlopsOfRuns(state, UnreadInstructions(state));
}

namespace {

// Each other version of the values `clones` are clones of, mapped to the
// clone.
CloneMap PlacedAtSlot(const PlannerState& state,
                      const std::vector<int>& clones) {
  CloneMap placed;
  const ValueTable& values = state.values();
  for (int clone : clones) {
    for (int version : values.VersionsOf(values[clone].origin)) {
      if (version == clone) continue;
      placed[values[version].instruction] = values[clone].instruction;
    }
  }
  return placed;
}

// Clones the candidate's chain at its first late use and redirects the late
// uses to the last clone. Returns what provides the value now.
absl::StatusOr<HloInstruction*> Recompute(PlannerState& state,
                                          const Candidate& candidate,
                                          int slot) {
  const int late_slot = candidate.first_late;
  CloneMap chain;
  const CloneMap earlier = PlacedAtSlot(state, candidate.reads_placed);
  std::vector<int> fresh_values;
  bool transient = false;
  PlacedClone placed{nullptr, -1};
  for (int member : candidate.chain) {
    TF_ASSIGN_OR_RETURN(placed,
                        PlaceClone(state, member, late_slot, chain, earlier));
    chain[state.values()[member].instruction] = placed.provider;
    fresh_values.push_back(placed.value);
    transient |= state.values()[placed.value].transient > 0;
  }
  const PlacedClone root = placed;
  AppliedMove& move = *state.moves().current();
  // The other values the move serves at late_slot: companions (clones of
  // their own) and siblings (the other elements the root's clone makes).
  struct Served {
    int original;
    PlacedClone placed;
  };
  std::vector<Served> served;
  auto take_over = [&](int original) {
    const Value& found = state.values()[original];
    move.moved.push_back({original, found.uses, found.dead});
    state.liveness().Touch(found.buffer);
  };
  for (int companion : candidate.companions) {
    take_over(companion);
    TF_ASSIGN_OR_RETURN(
        placed, PlaceClone(state, companion, late_slot, chain, earlier));
    served.push_back({companion, placed});
    transient |= state.values()[placed.value].transient > 0;
  }
  HloInstruction* root_clone = state.values()[root.value].producer;
  for (int sibling : candidate.siblings) {
    take_over(sibling);
    const Value found = state.values()[sibling];  // copy: the table grows
    served.push_back(
        {sibling, ProvideFromClone(state, found, root_clone, late_slot)});
  }
  for (const Served& other : served) fresh_values.push_back(other.placed.value);
  if (fresh_values.size() > 1 || transient) {
    CountChainTransient(state, fresh_values,
                        1 + static_cast<int>(served.size()), late_slot);
  }
  TF_RETURN_IF_ERROR(RedirectLateUses(state, candidate.value, root.provider,
                                      root.value, slot, late_slot));
  for (const Served& other : served) {
    TF_RETURN_IF_ERROR(RedirectLateUses(state, other.original,
                                        other.placed.provider,
                                        other.placed.value, slot, late_slot));
  }
  move.clones =
      static_cast<int>(candidate.chain.size() + candidate.companions.size());
  state.result().recomputed += move.clones;
  return root.provider;
}

// Copies the value to its compact layout after its last early use and back
// at its first late use, and redirects the late uses to the copy back.
absl::StatusOr<HloInstruction*> Compress(PlannerState& state,
                                         const Candidate& candidate, int slot) {
  const int late_slot = candidate.first_late;
  HloInstruction* producer = state.values()[candidate.value].instruction;
  const PlacedCopy compact =
      PlaceCopy(state, producer, *candidate.compact, candidate.compress_slot);
  state.values().AddUse(candidate.value,
                        {compact.copy, 0, producer, candidate.compress_slot});
  const PlacedCopy expand =
      PlaceCopy(state, compact.copy, producer->shape(), late_slot);
  HloInstruction* provider = expand.copy;
  Value expanded;
  expanded.instruction = provider;
  expanded.producer = provider;
  expanded.origin = provider;
  expanded.buffer = expand.buffer;
  expanded.def = late_slot;
  expanded.generation = state.values()[candidate.value].generation + 1;
  expanded.cost = CopyCost(state.liveness().Size(expand.buffer),
                           state.liveness().Size(compact.buffer));
  const int fresh = RegisterValue(state, std::move(expanded), provider);
  state.moves().Pin(provider, slot);
  TF_RETURN_IF_ERROR(RedirectLateUses(state, candidate.value, provider, fresh,
                                      slot, late_slot));
  ++state.result().compressed;
  return provider;
}

}  // namespace

absl::Status ApplyMove(PlannerState& state, const Candidate& candidate,
                       int slot) {
  const Value& moved = state.values()[candidate.value];
  AppliedMove& move = state.moves().Begin();
  state.liveness().BeginMove(state.moves().size() - 1, &move.liveness);
  move.kind = candidate.kind;
  move.moved.push_back({candidate.value, moved.uses, moved.dead});
  move.bytes_saved = candidate.gain;
  move.cost = candidate.cost;
  move.flops = candidate.flops;
  // Touch the moved buffer first so that its old toucher is restored on undo.
  state.liveness().Touch(moved.buffer);

  HloInstruction* provider = nullptr;
  if (candidate.kind == MoveKind::kRecompute) {
    TF_ASSIGN_OR_RETURN(provider, Recompute(state, candidate, slot));
  } else {
    TF_ASSIGN_OR_RETURN(provider, Compress(state, candidate, slot));
  }

  RematDecision decision;
  decision.action = candidate.kind == MoveKind::kRecompute
                        ? RematAction::kRecompute
                        : RematAction::kCompress;
  decision.value =
      std::string(state.values()[candidate.value].producer->name());
  decision.result = std::string(provider->name());
  decision.at = std::string(state.sequence()[slot]->name());
  decision.before = std::string(state.sequence()[candidate.first_late]->name());
  for (const HloInstruction* added : move.new_instructions) {
    decision.instructions.push_back(std::string(added->name()));
  }
  decision.bytes_saved = candidate.gain;
  decision.cost = candidate.cost;
  std::vector<RematDecision>& decisions = state.result().decisions;
  move.decision = static_cast<int>(decisions.size());
  decisions.push_back(std::move(decision));
  state.moves().End();
  state.liveness().EndMove();
  return absl::OkStatus();
}

absl::Status RevertMove(PlannerState& state, int move_index) {
  const AppliedMove& move = state.moves()[move_index];
  state.liveness().Revert(move.liveness);
  for (auto it = move.redirects.rbegin(); it != move.redirects.rend(); ++it) {
    TF_RETURN_IF_ERROR(
        it->user->ReplaceOperandWith(it->operand_no, it->old_operand));
  }
  ValueTable& values = state.values();
  for (const AppliedMove::MovedValue& moved : move.moved) {
    values.Restore(moved.value, moved.uses, moved.dead);
  }
  for (int index : move.new_values) values.Retire(index);
  const MoveLog::InstructionSet added = state.moves().MarkTakenBack(move_index);
  for (int index : move.operand_values) values.RemoveUsesBy(index, added);
  PlannerResult& result = state.result();
  result.instructions_added -= static_cast<int>(move.new_instructions.size());
  result.recomputed -= move.clones;
  if (move.kind == MoveKind::kCompress) --result.compressed;
  return absl::OkStatus();
}

namespace {

// Marks `taken_back` (instructions of moves taken back) dropped and deletes
// them. The fused computations of clones among them serve the next clones;
// those left unused stay in the module until Materialize removes them (a
// copy clones only what the entry reaches, and a walk of the whole module at
// each judgement is a measurable share of a deep graph's pass).
absl::Status Drop(PlannerState& state, MoveLog::InstructionSet taken_back) {
  state.moves().MarkDropped(taken_back);
  return RemoveInstructions(state.computation(), std::move(taken_back),
                            &state.recycler());
}

}  // namespace

absl::Status DiscardNewestMove(PlannerState& state) {
  MoveLog& moves = state.moves();
  const int newest = moves.size() - 1;
  TF_RETURN_IF_ERROR(RevertMove(state, newest));
  MoveLog::InstructionSet added(moves[newest].new_instructions.begin(),
                                moves[newest].new_instructions.end());
  moves.DiscardNewest();
  return Drop(state, std::move(added));
}

absl::Status DropTakenBack(PlannerState& state) {
  MoveLog::InstructionSet present = state.moves().TakenBackPresent();
  if (present.empty()) return absl::OkStatus();
  return Drop(state, std::move(present));
}

namespace {

// Sets the planned computation's schedule for copying, which must name
// every instruction: the planned order, then what is about to go (users
// last). TrimCopy sets the copy's real order; the module gets its given
// order back (GivenScheduleAgain) once copied.
void ScheduleEverything(PlannerState& state, const FinalOrder& order) {
  HloComputation* const computation = state.computation();
  HloInstructionSequence everything = order.sequence;
  for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
    if (state.moves().taken_back().contains(instruction) ||
        order.dead.contains(instruction)) {
      everything.push_back(instruction);
    }
  }
  state.module()->schedule().set_sequence(computation, std::move(everything));
}

// The planned computation's schedule as the planner was given it: a copy
// leaves the module as it found it, so that a copy made later (a lane's, of
// the module as given) sees no clone a plan since taken back had added.
void GivenScheduleAgain(PlannerState& state) {
  state.module()->schedule().set_sequence(state.computation(),
                                          state.sequence());
}

// Takes what the plan leaves out of `copy` (made with every name kept) and
// gives its planned computation the planned order.
absl::Status TrimCopy(PlannerState& state, const FinalOrder& order,
                      HloModule* copy) {
  const absl::string_view name = state.computation()->name();
  HloComputation* computation = copy->GetComputationWithName(name);
  if (computation == nullptr) {
    return absl::InternalError(
        absl::StrCat("rematerialization: the planned copy lost ", name));
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
  for (const HloInstruction* instruction : state.moves().TakenBackPresent()) {
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
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HloModule>> PlannedCopy(PlannerState& state) {
  const FinalOrder order = ComputeFinalOrder(state);
  ScheduleEverything(state, order);
  absl::Cleanup given_again = [&state] { GivenScheduleAgain(state); };
  // Clone CHECK-fails on an invalid schedule: a planner error says so.
  TF_RETURN_IF_ERROR(state.module()->schedule().Verify());
  // Clone("") keeps every name, which is how instructions are found again.
  std::unique_ptr<HloModule> copy = state.module()->Clone("");
  TF_RETURN_IF_ERROR(TrimCopy(state, order, copy.get()));
  return copy;
}

absl::StatusOr<JudgingCopy> JudgingCopyOf(PlannerState& state,
                                          const FinalOrder& order) {
  // The copy's schedule is verified as it is set (an error, not a CHECK).
  ScheduleEverything(state, order);
  absl::Cleanup given_again = [&state] { GivenScheduleAgain(state); };
  TF_ASSIGN_OR_RETURN(JudgingCopy copy,
                      state.judging_copier().Copy(*state.module()));
  TF_RETURN_IF_ERROR(TrimCopy(state, order, copy.module.get()));
  return copy;
}

absl::StatusOr<PlannerResult> Materialize(PlannerState& state) {
  HloComputation* computation = state.computation();
  const MoveLog& moves = state.moves();
  PlannerResult& result = state.result();
  TF_RETURN_IF_ERROR(RemoveInstructions(computation, moves.TakenBackPresent()));
  FinalOrder order = ComputeFinalOrder(state);
  const absl::flat_hash_set<const HloInstruction*>& dead = order.dead;
  result.instructions_removed = static_cast<int>(dead.size());
  result.extra_flops = -FlopsOfRuns(state, dead);
  TF_RETURN_IF_ERROR(RemoveInstructions(computation, dead));
  state.module()->schedule().set_sequence(computation,
                                          std::move(order.sequence));

  // Keep each clone after the point whose memory it relieves, so that a later
  // scheduler cannot hoist it back next to the original (jax PR #2391).
  const MoveLog::InstructionSet& taken_back = moves.taken_back();
  for (const auto& [clone, trigger] : moves.pins()) {
    HloInstruction* anchor = state.sequence()[trigger];
    if (taken_back.contains(clone) || dead.contains(clone) ||
        dead.contains(anchor)) {
      continue;
    }
    if (anchor->opcode() == HloOpcode::kParameter ||
        anchor->opcode() == HloOpcode::kConstant) {
      continue;
    }
    TF_RETURN_IF_ERROR(anchor->AddControlDependencyTo(clone));
    ++result.pinned;
  }
  for (const auto& [reader, writer] : moves.guards()) {
    if (taken_back.contains(reader) || dead.contains(reader) ||
        dead.contains(writer)) {
      continue;
    }
    TF_RETURN_IF_ERROR(reader->AddControlDependencyTo(writer));
  }
  // Fusion clones brought their own fused computations; those of clones
  // taken back (or of producers that died) are unreachable now.
  if (!taken_back.empty() || !dead.empty()) {
    TF_RETURN_IF_ERROR(state.module()->RemoveUnusedComputations());
  }
  for (const AppliedMove& move : moves.all()) {
    if (!move.undone) result.extra_flops += move.flops;
  }
  return result;
}

}  // namespace remat
}  // namespace xla
