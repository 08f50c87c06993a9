#include "xla/service/remat/greedy_recompute.h"

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
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_input_output_alias_config.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/range_max_tree.h"
#include "xla/service/remat/remat_candidates.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

double RecomputeCost(const HloCostAnalysis& costs,
                     const HloInstruction& instruction) {
  double flops = std::max<double>(0, costs.flop_count(instruction)) +
                 std::max<double>(0, costs.transcendental_count(instruction));
  double bytes = std::max<double>(0, costs.bytes_accessed(instruction));
  return 1.0 + flops + bytes / 4.0;
}

namespace {

struct Use {
  HloInstruction* user;
  int64_t operand_no;
  HloInstruction* via;  // the producer itself or one of its bitcasts
  int pos;
};

// A value the planner may move: an array defined by one instruction, seen
// through the bitcasts of it.
struct Value {
  HloInstruction* instruction = nullptr;
  const HloInstruction* origin = nullptr;  // the instruction first cloned
  int buffer = -1;
  int def = 0;
  std::vector<Use> uses;
  bool movable = true;
  bool dead = false;
  bool active = false;
  int generation = 0;
};

class GreedyPlanner {
 public:
  GreedyPlanner(HloModule* module, const GreedyRecomputeConfig& config,
                const SizeFunction& size_fn, const HloCostAnalysis& costs)
      : module_(module),
        computation_(module->entry_computation()),
        config_(config),
        size_fn_(size_fn),
        costs_(costs) {}

  absl::Status Init();
  void Sweep();
  absl::StatusOr<GreedyRecomputeResult> Materialize();

 private:
  struct Candidate {
    int value = -1;
    int first_late = 0;
    int64_t gain = 0;
    double cost = 0;
  };

  std::vector<int> BuffersOf(const HloInstruction* instruction) const;
  int64_t BufferSize(int b) const { return buffer_size_[b]; }
  int End(int b) const { return buffer_end_[b]; }
  // The version of `operand` a clone placed at `slot` should read.
  HloInstruction* ChooseOperand(HloInstruction* operand, int slot) const;
  bool Evaluate(int value, int p, Candidate& out) const;
  void Apply(const Candidate& candidate, int p);
  void Activate(int value);
  HloInstruction* BitcastOf(HloInstruction* clone, const Shape& shape,
                            int slot);
  int AddBuffer(int64_t size, int def, int end, bool live_to_end);
  void MarkOverwrittenBuffers();

  HloModule* module_;
  HloComputation* computation_;
  GreedyRecomputeConfig config_;
  const SizeFunction& size_fn_;
  const HloCostAnalysis& costs_;

  std::unique_ptr<ComputationMemory> memory_;
  std::vector<HloInstruction*> sequence_;
  int n_ = 0;
  std::vector<int64_t> buffer_size_;
  std::vector<int> buffer_end_;
  std::vector<bool> buffer_live_to_end_;
  std::vector<int> buffer_value_;  // -1 when the buffer is not movable
  // Slot from which a buffer's contents are gone: no clone placed after it
  // may read the buffer. n_ when nothing overwrites it.
  std::vector<int> buffer_overwritten_at_;
  std::vector<Value> values_;
  absl::flat_hash_map<const HloInstruction*, int> value_of_;
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> extra_sources_;
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> versions_;
  std::vector<std::vector<int>> values_by_def_;
  std::vector<std::vector<HloInstruction*>> clones_at_slot_;
  std::vector<std::pair<HloInstruction*, int>> pins_;  // clone, trigger slot
  absl::flat_hash_map<std::pair<const HloInstruction*, std::string>,
                      HloInstruction*>
      bitcasts_;
  std::vector<int> active_;
  std::unique_ptr<RangeMaxTree> mem_;
  GreedyRecomputeResult result_;
  int current_p_ = 0;
};

int GreedyPlanner::AddBuffer(int64_t size, int def, int end,
                             bool live_to_end) {
  buffer_size_.push_back(size);
  buffer_end_.push_back(std::max(def, end));
  buffer_live_to_end_.push_back(live_to_end);
  buffer_value_.push_back(-1);
  buffer_overwritten_at_.push_back(n_);
  return static_cast<int>(buffer_size_.size()) - 1;
}

void GreedyPlanner::MarkOverwrittenBuffers() {
  auto mark = [&](int id, int slot) {
    buffer_overwritten_at_[id] = std::min(buffer_overwritten_at_[id], slot);
  };
  // In-place instructions (dynamic-update-slice, scatter, in-place
  // fusions...) write over an operand's buffer; a clone placed right before
  // the writer still reads the old contents.
  AliasInfo alias_info;
  for (int pos = 0; pos < n_; ++pos) {
    const HloInstruction* instruction = sequence_[pos];
    for (const auto& [operand, unused] :
         alias_info.GetInPlaceInputOutputPairs(instruction)) {
      for (int id : memory_->Sources(
               instruction->operand(operand.operand_number),
               operand.operand_index)) {
        mark(id, pos);
      }
    }
  }
  // Donated parameters (input_output_alias, e.g. weights the optimizer
  // updates) are overwritten by the earliest definition of an output aliased
  // with them; clones reading one stay strictly before that definition's
  // slot. No known writer: treated as overwritten from the start.
  module_->input_output_alias_config().ForEachAlias(
      [&](const ShapeIndex& output_index,
          const HloInputOutputAliasConfig::Alias& alias) {
        int writer = 0;
        const std::vector<int>& ids =
            memory_->Sources(computation_->root_instruction(), output_index);
        if (!ids.empty()) {
          writer = n_;
          for (int id : ids) {
            writer = std::min(writer, memory_->buffers()[id].def_pos);
          }
        }
        const HloInstruction* parameter =
            computation_->parameter_instruction(alias.parameter_number);
        for (int id : memory_->AllSources(parameter)) mark(id, writer - 1);
      });
}

absl::Status GreedyPlanner::Init() {
  sequence_ = module_->schedule().sequence(computation_).instructions();
  n_ = static_cast<int>(sequence_.size());
  TF_ASSIGN_OR_RETURN(auto called, CalledComputationPeaks(*module_, size_fn_));
  TF_ASSIGN_OR_RETURN(ComputationMemory memory,
                      ComputationMemory::Build(computation_, sequence_,
                                               /*is_entry=*/true, size_fn_,
                                               called));
  memory_ = std::make_unique<ComputationMemory>(std::move(memory));
  for (const TrackedBuffer& b : memory_->buffers()) {
    AddBuffer(b.size, b.def_pos, memory_->LastPosition(b), b.live_to_end);
  }
  values_by_def_.assign(n_, {});
  clones_at_slot_.assign(n_, {});
  MarkOverwrittenBuffers();
  for (int pos = 0; pos < n_; ++pos) {
    HloInstruction* instruction = sequence_[pos];
    if (!IsRecomputable(instruction)) continue;
    const std::vector<int>& ids = memory_->Sources(instruction, {});
    if (ids.size() != 1) continue;
    const int b = ids[0];
    if (memory_->buffers()[b].defining != instruction) continue;
    if (buffer_live_to_end_[b]) continue;
    if (BufferSize(b) <= config_.min_candidate_bytes) continue;
    Value v;
    v.instruction = instruction;
    v.origin = instruction;
    v.buffer = b;
    v.def = pos;
    // The group: the producer and every bitcast of it, transitively.
    std::vector<HloInstruction*> group = {instruction};
    for (size_t i = 0; i < group.size(); ++i) {
      for (HloInstruction* user : group[i]->users()) {
        if (user->opcode() == HloOpcode::kBitcast) {
          if (!user->control_successors().empty()) v.movable = false;
          group.push_back(user);
          continue;
        }
        const HloOpcode op = user->opcode();
        if (op == HloOpcode::kTuple || op == HloOpcode::kGetTupleElement ||
            op == HloOpcode::kWhile || op == HloOpcode::kAddDependency ||
            op == HloOpcode::kOptimizationBarrier ||
            op == HloOpcode::kDomain) {
          v.movable = false;  // its later uses cannot be redirected alone
        }
        for (int64_t k : user->OperandIndices(group[i])) {
          v.uses.push_back({user, k, group[i], memory_->Position(user)});
        }
      }
    }
    const int index = static_cast<int>(values_.size());
    values_.push_back(std::move(v));
    buffer_value_[b] = index;
    for (HloInstruction* member : group) value_of_[member] = index;
    versions_[instruction].push_back(index);
    values_by_def_[pos].push_back(index);
  }
  mem_ = std::make_unique<RangeMaxTree>(memory_->profile());
  return absl::OkStatus();
}

std::vector<int> GreedyPlanner::BuffersOf(
    const HloInstruction* instruction) const {
  auto it = extra_sources_.find(instruction);
  if (it != extra_sources_.end()) return it->second;
  return memory_->AllSources(instruction);
}

HloInstruction* GreedyPlanner::ChooseOperand(HloInstruction* operand,
                                             int slot) const {
  auto it = value_of_.find(operand);
  if (it == value_of_.end() || values_[it->second].instruction != operand) {
    return operand;
  }
  auto vit = versions_.find(values_[it->second].origin);
  if (vit == versions_.end()) return operand;
  HloInstruction* best = operand;
  int best_end = End(values_[it->second].buffer);
  for (int version : vit->second) {
    const Value& v = values_[version];
    if (v.dead || v.def >= slot) continue;
    // Same shape is guaranteed: every version clones the same producer.
    if (End(v.buffer) > best_end) {
      best = v.instruction;
      best_end = End(v.buffer);
    }
  }
  return best;
}

bool GreedyPlanner::Evaluate(int index, int p, Candidate& out) const {
  const Value& v = values_[index];
  if (v.dead || !v.movable || v.def >= p) return false;
  if (v.generation >= config_.max_generations) return false;
  const int b = v.buffer;
  if (buffer_live_to_end_[b] || End(b) <= p) return false;
  int first_late = n_;
  for (const Use& use : v.uses) {
    if (use.pos == p) return false;  // needed right here
    if (use.pos > p) first_late = std::min(first_late, use.pos);
  }
  if (first_late >= n_) return false;
  int64_t extension = 0;
  absl::flat_hash_set<int> seen;
  for (HloInstruction* operand : v.instruction->operands()) {
    HloInstruction* chosen = ChooseOperand(operand, first_late);
    for (int k : BuffersOf(chosen)) {
      if (buffer_overwritten_at_[k] < first_late) return false;
      if (!seen.insert(k).second) continue;
      if (BufferSize(k) == 0 || buffer_live_to_end_[k]) continue;
      if (End(k) < p) extension += BufferSize(k);
    }
  }
  const int64_t gain = BufferSize(b) - extension;
  if (gain <= 0) return false;
  out.value = index;
  out.first_late = first_late;
  out.gain = gain;
  out.cost = RecomputeCost(costs_, *v.origin);
  return true;
}

void GreedyPlanner::Activate(int index) {
  Value& v = values_[index];
  if (v.active || v.dead) return;
  v.active = true;
  active_.push_back(index);
}

HloInstruction* GreedyPlanner::BitcastOf(HloInstruction* clone,
                                         const Shape& shape, int slot) {
  auto key = std::make_pair(static_cast<const HloInstruction*>(clone),
                            ShapeUtil::HumanStringWithLayout(shape));
  auto it = bitcasts_.find(key);
  if (it != bitcasts_.end()) return it->second;
  HloInstruction* bitcast = computation_->AddInstruction(
      HloInstruction::CreateBitcast(shape, clone));
  bitcasts_[key] = bitcast;
  extra_sources_[bitcast] = extra_sources_[clone];
  value_of_[bitcast] = value_of_[clone];
  clones_at_slot_[slot].push_back(bitcast);
  ++result_.instructions_added;
  return bitcast;
}

void GreedyPlanner::Apply(const Candidate& candidate, int p) {
  const int u = candidate.first_late;
  Value original = values_[candidate.value];  // copy: values_ grows below
  const int b = original.buffer;
  const int64_t size = BufferSize(b);

  HloInstruction* clone = computation_->AddInstruction(
      original.instruction->Clone("remat"));
  for (HloInstruction* pred : original.instruction->control_predecessors()) {
    (void)pred->AddControlDependencyTo(clone);
  }
  const int clone_buffer = AddBuffer(size, u, u, /*live_to_end=*/false);
  extra_sources_[clone] = {clone_buffer};
  clones_at_slot_[u].push_back(clone);
  ++result_.instructions_added;
  ++result_.recomputed;

  Value fresh;
  fresh.instruction = clone;
  fresh.origin = original.origin;
  fresh.buffer = clone_buffer;
  fresh.def = u;
  fresh.generation = original.generation + 1;
  const int fresh_index = static_cast<int>(values_.size());
  value_of_[clone] = fresh_index;
  buffer_value_[clone_buffer] = fresh_index;

  // Later uses read the clone (or a bitcast of it); earlier ones stay.
  std::vector<Use> early;
  int clone_end = u;
  for (const Use& use : original.uses) {
    if (use.pos <= p) {
      early.push_back(use);
      continue;
    }
    HloInstruction* target =
        use.via == original.instruction
            ? clone
            : BitcastOf(clone, use.via->shape(), u);
    (void)use.user->ReplaceOperandWith(use.operand_no, target);
    fresh.uses.push_back({use.user, use.operand_no, target, use.pos});
    clone_end = std::max(clone_end, use.pos);
  }
  buffer_end_[clone_buffer] = clone_end;
  mem_->Add(u, clone_end, size);

  const int old_end = End(b);
  if (early.empty()) {
    // No use left before the trigger point: the producer goes away.
    values_[candidate.value].dead = true;
    mem_->Add(original.def, old_end, -size);
    buffer_end_[b] = original.def;
  } else {
    int new_end = original.def;
    for (const Use& use : early) new_end = std::max(new_end, use.pos);
    mem_->Add(new_end + 1, old_end, -size);
    buffer_end_[b] = new_end;
  }
  values_[candidate.value].uses = std::move(early);

  values_.push_back(std::move(fresh));
  versions_[original.origin].push_back(fresh_index);
  values_by_def_[u].push_back(fresh_index);

  // Operands must live until the clone runs.
  for (int64_t k = 0; k < clone->operand_count(); ++k) {
    HloInstruction* operand = clone->mutable_operand(k);
    HloInstruction* chosen = ChooseOperand(operand, u);
    if (chosen != operand) (void)clone->ReplaceOperandWith(k, chosen);
    auto vit = value_of_.find(chosen);
    if (vit != value_of_.end()) {
      values_[vit->second].uses.push_back({clone, k, chosen, u});
      if (values_[vit->second].def < current_p_) Activate(vit->second);
    }
    for (int kb : BuffersOf(chosen)) {
      if (BufferSize(kb) == 0 || buffer_live_to_end_[kb]) continue;
      if (End(kb) < u) {
        mem_->Add(End(kb) + 1, u, BufferSize(kb));
        buffer_end_[kb] = u;
      }
    }
  }
  pins_.push_back({clone, p});

  RematDecision d;
  d.action = "recompute";
  d.value = std::string(original.instruction->name());
  d.result = std::string(clone->name());
  d.at = std::string(sequence_[p]->name());
  d.before = std::string(sequence_[u]->name());
  d.bytes_saved = candidate.gain;
  d.cost = candidate.cost;
  result_.decisions.push_back(std::move(d));
}

void GreedyPlanner::Sweep() {
  const int64_t target = config_.target_bytes;
  if (target > 0 && mem_->Max() <= target) return;
  const int max_applications = 4 * n_ + 16;
  int applications = 0;
  for (int p = 0; p < n_; ++p) {
    current_p_ = p;
    if (p > 0) {
      for (int index : values_by_def_[p - 1]) Activate(index);
    }
    while (mem_->At(p) > target && applications < max_applications) {
      Candidate best;
      double best_score = -1;
      size_t keep = 0;
      for (size_t i = 0; i < active_.size(); ++i) {
        const int index = active_[i];
        Value& v = values_[index];
        if (v.dead || End(v.buffer) < p) {
          v.active = false;  // re-activated if a clone extends it
          continue;
        }
        active_[keep++] = index;
        Candidate c;
        if (!Evaluate(index, p, c)) continue;
        const double score = static_cast<double>(c.gain) / c.cost;
        if (score > best_score) {
          best_score = score;
          best = c;
        }
      }
      active_.resize(keep);
      if (best.value < 0) break;
      Apply(best, p);
      ++applications;
    }
  }
  result_.planned_peak_bytes = mem_->Max();
}

absl::StatusOr<GreedyRecomputeResult> GreedyPlanner::Materialize() {
  // A producer whose every use moved to a clone dies, with the bitcasts of
  // it that nobody reads any more.
  absl::flat_hash_set<const HloInstruction*> dead;
  for (const Value& v : values_) {
    if (!v.dead || v.instruction == computation_->root_instruction()) continue;
    std::vector<const HloInstruction*> group = {v.instruction};
    bool unused = true;
    for (size_t i = 0; i < group.size() && unused; ++i) {
      for (const HloInstruction* user : group[i]->users()) {
        if (user->opcode() == HloOpcode::kBitcast &&
            user != computation_->root_instruction()) {
          group.push_back(user);
        } else {
          unused = false;
        }
      }
    }
    if (unused) dead.insert(group.begin(), group.end());
  }
  HloInstructionSequence sequence;
  absl::flat_hash_set<const HloInstruction*> placed;
  for (int slot = 0; slot < n_; ++slot) {
    // Clones at one slot may read each other: place operands first.
    const std::vector<HloInstruction*>& group = clones_at_slot_[slot];
    absl::flat_hash_set<const HloInstruction*> in_group(group.begin(),
                                                        group.end());
    std::vector<std::pair<HloInstruction*, size_t>> stack;
    for (HloInstruction* start : group) {
      if (placed.contains(start) || dead.contains(start)) continue;
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
    HloInstruction* original = sequence_[slot];
    if (!dead.contains(original)) sequence.push_back(original);
  }
  for (const HloInstruction* instruction : dead) {
    HloInstruction* mutable_instruction =
        const_cast<HloInstruction*>(instruction);
    TF_RETURN_IF_ERROR(mutable_instruction->DropAllControlDeps());
  }
  // Remove users before their operands: walk the schedule backwards.
  std::vector<const HloInstruction*> dead_list;
  for (auto it = sequence_.rbegin(); it != sequence_.rend(); ++it) {
    if (dead.contains(*it)) dead_list.push_back(*it);
  }
  for (auto it = clones_at_slot_.rbegin(); it != clones_at_slot_.rend(); ++it) {
    for (auto c = it->rbegin(); c != it->rend(); ++c) {
      if (dead.contains(*c)) dead_list.push_back(*c);
    }
  }
  for (const HloInstruction* instruction : dead_list) {
    TF_RETURN_IF_ERROR(computation_->RemoveInstruction(
        const_cast<HloInstruction*>(instruction)));
    ++result_.instructions_removed;
  }
  module_->schedule().set_sequence(computation_, std::move(sequence));

  // Keep each clone after the point whose memory it relieves, so that a later
  // scheduler cannot hoist it back next to the original (jax PR #2391).
  for (const auto& [clone, trigger] : pins_) {
    HloInstruction* anchor = sequence_[trigger];
    if (dead.contains(clone) || dead.contains(anchor)) continue;
    if (anchor->opcode() == HloOpcode::kParameter ||
        anchor->opcode() == HloOpcode::kConstant) {
      continue;
    }
    TF_RETURN_IF_ERROR(anchor->AddControlDependencyTo(clone));
    ++result_.pinned;
  }
  return result_;
}

}  // namespace

absl::StatusOr<GreedyRecomputeResult> RunGreedyRecompute(
    HloModule* module, const GreedyRecomputeConfig& config,
    const SizeFunction& size_fn, const HloCostAnalysis& costs) {
  if (!module->has_schedule()) {
    return absl::FailedPreconditionError("greedy recompute needs a schedule");
  }
  GreedyPlanner planner(module, config, size_fn, costs);
  TF_RETURN_IF_ERROR(planner.Init());
  planner.Sweep();
  return planner.Materialize();
}

}  // namespace remat
}  // namespace xla
