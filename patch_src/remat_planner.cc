#include "xla/service/remat/remat_planner.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_input_output_alias_config.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/remat/articulation_points.h"
#include "xla/service/remat/compact_layout.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/range_max_tree.h"
#include "xla/service/remat/remat_candidates.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {

namespace {

bool IsWhileBody(const HloComputation* computation) {
  for (const HloInstruction* caller :
       computation->caller_instructions(HloOpcode::kWhile)) {
    if (caller->while_body() == computation) {
      return true;
    }
  }
  return false;
}

struct Use {
  HloInstruction* user;
  int64_t operand_no;
  HloInstruction* via;  // the producer itself or one of its bitcasts
  int pos;
};

// A value the planner may move: an array defined by one instruction, seen
// through the bitcasts of it; or one element of a multi-output producer
// (ProducerKind::kMultiOutput), seen through the get-tuple-elements of that
// element and their bitcasts.
struct Value {
  // What the uses read: the producer itself, or a get-tuple-element of it.
  HloInstruction* instruction = nullptr;
  // What a recompute clones; `instruction` unless the value is an element.
  HloInstruction* producer = nullptr;
  int64_t tuple_index = -1;  // the element of `producer`; -1 for arrays
  // The producer's other outputs (scratch, workspace, unused fusion
  // outputs): a clone allocates them too, for the moment it runs.
  int64_t transient = 0;
  const HloInstruction* origin = nullptr;  // the instruction first cloned
  int buffer = -1;
  int def = 0;
  std::vector<Use> uses;
  bool movable = true;
  bool dead = false;
  bool active = false;
  int generation = 0;
  double cost = 0;  // of producing it once more
};

// Two copies of a value cost what they move.
double CopyCost(int64_t bytes_in, int64_t bytes_out) {
  return 1.0 + static_cast<double>(bytes_in + bytes_out) / 4.0;
}

// Plans tried when the budget is missed: the budget and this many minus one
// targets evenly between it and the starting peak.
constexpr int kTargetLadderSteps = 4;

enum class MoveKind { kRecompute, kCompress };

struct Candidate {
  MoveKind kind = MoveKind::kRecompute;
  int value = -1;
  int first_late = 0;
  int64_t gain = 0;
  double cost = 0;
  // Recompute: values cloned at first_late, operands first, `value` last.
  std::vector<int> chain;
  // Compress: where the compact copy goes and its shape.
  int compress_slot = 0;
  std::optional<Shape> compact;
};

// The state of one recompute evaluation. A link that turns out not to be
// clonable is taken back through the logs instead of trying it on copies of
// the sets (copying them at every level made deep searches quadratic).
struct ChainSearch {
  std::vector<int> chain;           // links found so far, operands first
  absl::flat_hash_set<int> in_chain;  // the value, `chain` and the descent
  absl::flat_hash_set<int> seen;    // buffers already counted
  std::vector<int> seen_log;        // `seen` in insertion order
  int64_t extension = 0;            // bytes held across p for the clone
  int horizon = 0;                  // see Planner::Movable
};

// The sweep's last scoring of one value: its candidates in the order they
// are considered. Valid while no move was applied or taken back since
// (`epoch`) and the sweep is in [from, until).
struct ScoreCache {
  int epoch = -1;
  int from = 0;
  int until = 0;
  std::vector<Candidate> candidates;
};

// Everything one move changed, so that it can be taken back.
struct AppliedMove {
  int decision = -1;
  MoveKind kind = MoveKind::kRecompute;
  std::vector<std::tuple<int, int, int64_t>> memory_adds;
  std::vector<std::pair<int, int>> old_ends;       // buffer, end before
  std::vector<std::tuple<int, int, bool>> reads;    // buffer, slot, added
  std::vector<int> freed;                           // buffers of dead producers
  std::vector<std::pair<int, int>> old_touches;    // buffer, toucher before
  struct Redirect {
    HloInstruction* user;
    int64_t operand_no;
    HloInstruction* old_operand;
  };
  std::vector<Redirect> redirects;
  int original = -1;
  std::vector<Use> original_uses;
  bool original_dead = false;
  std::vector<int> new_values;
  std::vector<int> operand_values;  // values given a use by a new instruction
  std::vector<HloInstruction*> new_instructions;
  int clones = 0;
  int64_t bytes_saved = 0;
  double cost = 0;
  bool undone = false;
};

class Planner {
 public:
  Planner(HloModule* module, HloComputation* computation,
          const PlannerConfig& config, const SizeFunction& size_fn,
          const HloCostAnalysis& costs)
      : module_(module),
        computation_(computation),
        config_(config),
        size_fn_(size_fn),
        costs_(costs) {}

  absl::Status Init();
  // One plan at `target`: the sweep, then for `path` the undo. Returns the
  // planned peak.
  int64_t Plan(int64_t target);
  // Takes back every move, newest first: the module is as Init found it.
  void RevertAll();
  int64_t initial_peak() const { return result_.initial_peak_bytes; }
  bool has_moves() const {
    for (const AppliedMove& move : moves_) {
      if (!move.undone) return true;
    }
    return false;
  }
  void set_rejected() {
    result_.plan_rejected = true;
    result_.planned_peak_bytes = result_.initial_peak_bytes;
  }
  absl::StatusOr<PlannerResult> Materialize();
  // A copy of the module with the plan applied (same names, the planned
  // order), for judging the plan before it is applied.
  absl::StatusOr<std::unique_ptr<HloModule>> PlannedCopy();

 private:
  void Sweep(int64_t target);
  // Drops their control edges and removes them, users first.
  static absl::Status RemoveInstructions(
      HloComputation* computation,
      absl::flat_hash_set<const HloInstruction*> doomed);
  // What the plan leaves: producers no use is left for, and the order of
  // the computation with the clones and copies at their slots.
  struct FinalOrder {
    absl::flat_hash_set<const HloInstruction*> dead;
    HloInstructionSequence sequence;
  };
  FinalOrder ComputeFinalOrder() const;
  void UndoChains(int64_t target);
  int64_t BufferSize(int b) const { return buffer_size_[b]; }
  int End(int b) const { return buffer_end_[b]; }
  // The buffers an instruction's value may be in. The reference stays valid
  // until the next move adds instructions.
  const std::vector<int>& BuffersOf(const HloInstruction* instruction) const;
  // The version of `operand` a clone placed at `slot` should read.
  HloInstruction* ChooseOperand(HloInstruction* operand, int slot) const;
  // Checks shared by every move of value `index` at position p; sets the
  // first later use.
  // Every scoring function lowers `horizon` to the first position after p
  // at which its answer could differ with no move applied in between (a
  // use or the end of a buffer it compared with p is crossed): the sweep
  // reuses a score until then.
  bool Movable(int index, int p, int& first_late, int& horizon) const;
  bool EvaluateRecompute(int index, int p, bool chains, Candidate& out,
                         int& horizon) const;
  bool EvaluateCompress(int index, int p, Candidate& out, int& horizon) const;
  // Scores value `index` at p into its cache unless the cache still holds.
  void Score(int index, int p);
  // Adds the operands of `index` a clone at `u` reads to the chain or to the
  // extension held across p. False when the clone cannot read them there.
  bool CollectOperands(int index, int p, int u, bool chains,
                       ChainSearch& search) const;
  bool ChainLink(int index) const;
  void Apply(const Candidate& candidate, int p);
  HloInstruction* PlaceClone(int index, int u,
                             const absl::flat_hash_map<const HloInstruction*,
                                                       HloInstruction*>& chain,
                             int& fresh_index);
  int RegisterValue(HloInstruction* instruction, const HloInstruction* origin,
                    int buffer, int def, int generation, double cost);
  // Init: a candidate value read through `roots` (the producer, or its
  // get-tuple-elements of one element) and their bitcasts.
  void AddInitialValue(HloInstruction* producer, int64_t tuple_index,
                       const std::vector<HloInstruction*>& roots, int buffer,
                       int pos);
  void AddMultiOutputValues(HloInstruction* producer, int pos);
  // True when no use of any output of `producer` is left: it can go.
  bool ProducerUnused(const HloInstruction* producer) const;
  double ValueCost(int index) const { return values_[index].cost; }
  HloInstruction* PlaceCopy(HloInstruction* source, const Shape& shape,
                            int slot, int& buffer);
  void GuardReads(HloInstruction* reader, const HloInstruction* read);
  void RedirectLateUses(int original, HloInstruction* replacement,
                        int fresh_index, int p, int u);
  // The memory at u while the values `fresh` (clones placed there, operands
  // first) are computed one after another.
  void CountChainTransient(const std::vector<int>& fresh, int u);
  void Revert(AppliedMove& move);
  bool Undoable(int move_index) const;
  void Activate(int value);
  HloInstruction* BitcastOf(HloInstruction* clone, const Shape& shape,
                            int slot);
  int AddBuffer(int64_t size, int def, int end, bool live_to_end);
  void AddMemory(int lo, int hi, int64_t delta);
  void SetEnd(int b, int end);
  // A buffer lives from its definition to its last read; reads come and go
  // as uses move to clones and producers die.
  void AddRead(int b, int slot);
  void RemoveRead(int b, int slot);
  void UpdateEnd(int b);
  void Touch(int b);
  void MarkOverwrittenBuffers();

  HloModule* module_;
  HloComputation* computation_;
  PlannerConfig config_;
  const SizeFunction& size_fn_;
  const HloCostAnalysis& costs_;

  std::unique_ptr<ComputationMemory> memory_;
  std::vector<HloInstruction*> sequence_;
  int n_ = 0;
  std::vector<int64_t> buffer_size_;
  std::vector<int> buffer_end_;
  std::vector<bool> buffer_live_to_end_;
  std::vector<int> buffer_def_;
  std::vector<int64_t> defined_bytes_;  // by the original instruction at a slot
  std::vector<std::multiset<int>> buffer_reads_;
  std::vector<bool> buffer_freed_;  // its producer was removed
  // Slot from which a buffer's contents are gone: no clone placed after it
  // may read the buffer. n_ when nothing overwrites it.
  std::vector<int> buffer_overwritten_at_;
  // The instruction that overwrites the buffer (nullptr: none known). A
  // clone reading the buffer gets a control edge to it, so that a later
  // scheduler cannot move the write before the read.
  std::vector<HloInstruction*> buffer_writer_;
  std::vector<std::pair<HloInstruction*, HloInstruction*>> guards_;
  // The last move that read or changed the buffer; -1 for none.
  std::vector<int> buffer_touched_by_;
  std::vector<Value> values_;
  absl::flat_hash_map<const HloInstruction*, int> value_of_;
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> extra_sources_;
  // AllSources of original instructions, computed once (node map: stable).
  mutable absl::node_hash_map<const HloInstruction*, std::vector<int>>
      all_sources_;
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> versions_;
  absl::flat_hash_set<const HloInstruction*> articulation_;
  std::vector<std::vector<int>> values_by_def_;
  std::vector<std::vector<HloInstruction*>> clones_at_slot_;
  std::vector<std::pair<HloInstruction*, int>> pins_;  // clone, trigger slot
  absl::flat_hash_map<std::pair<const HloInstruction*, std::string>,
                      HloInstruction*>
      bitcasts_;
  absl::flat_hash_set<const HloInstruction*> removed_;
  std::vector<int> active_;
  std::unique_ptr<RangeMaxTree> mem_;
  std::vector<AppliedMove> moves_;
  // Bumped whenever a move is applied or taken back: scores go stale.
  int epoch_ = 0;
  std::vector<ScoreCache> scores_;  // by value
  AppliedMove* current_ = nullptr;  // the move being applied
  PlannerResult result_;
  int current_p_ = 0;
};

int Planner::AddBuffer(int64_t size, int def, int end, bool live_to_end) {
  buffer_size_.push_back(size);
  buffer_end_.push_back(std::max(def, end));
  buffer_live_to_end_.push_back(live_to_end);
  buffer_def_.push_back(def);
  buffer_reads_.emplace_back();
  buffer_freed_.push_back(false);
  buffer_overwritten_at_.push_back(n_);
  buffer_writer_.push_back(nullptr);
  buffer_touched_by_.push_back(-1);
  const int b = static_cast<int>(buffer_size_.size()) - 1;
  Touch(b);
  return b;
}

void Planner::AddMemory(int lo, int hi, int64_t delta) {
  mem_->Add(lo, hi, delta);
  if (current_ != nullptr) current_->memory_adds.push_back({lo, hi, delta});
}

void Planner::SetEnd(int b, int end) {
  if (current_ != nullptr) current_->old_ends.push_back({b, buffer_end_[b]});
  buffer_end_[b] = end;
  Touch(b);
}

void Planner::AddRead(int b, int slot) {
  if (buffer_live_to_end_[b] || buffer_freed_[b]) return;
  buffer_reads_[b].insert(slot);
  if (current_ != nullptr) current_->reads.push_back({b, slot, true});
  UpdateEnd(b);
}

void Planner::RemoveRead(int b, int slot) {
  if (buffer_live_to_end_[b] || buffer_freed_[b]) return;
  auto it = buffer_reads_[b].find(slot);
  if (it == buffer_reads_[b].end()) return;
  buffer_reads_[b].erase(it);
  if (current_ != nullptr) current_->reads.push_back({b, slot, false});
  UpdateEnd(b);
}

void Planner::UpdateEnd(int b) {
  const std::multiset<int>& reads = buffer_reads_[b];
  const int end =
      reads.empty() ? buffer_def_[b] : std::max(buffer_def_[b], *reads.rbegin());
  const int old_end = End(b);
  if (end == old_end) return;
  if (end > old_end) {
    AddMemory(old_end + 1, end, BufferSize(b));
  } else {
    AddMemory(end + 1, old_end, -BufferSize(b));
  }
  SetEnd(b, end);
}

void Planner::Touch(int b) {
  if (current_ == nullptr) return;
  const int move = static_cast<int>(moves_.size()) - 1;
  if (buffer_touched_by_[b] == move) return;
  current_->old_touches.push_back({b, buffer_touched_by_[b]});
  buffer_touched_by_[b] = move;
}

void Planner::MarkOverwrittenBuffers() {
  auto mark = [&](int id, int slot, int writer) {
    if (slot < buffer_overwritten_at_[id]) {
      buffer_overwritten_at_[id] = slot;
      buffer_writer_[id] = writer < n_ ? sequence_[writer] : nullptr;
    }
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
        mark(id, pos, pos);
      }
    }
  }
  // A while body's parameter and root are one buffer per element: an
  // element the body replaces is overwritten where its new value is defined
  // (the earliest definition among its sources), so clones reading the old
  // one stay strictly before that slot.
  if (IsWhileBody(computation_)) {
    const HloInstruction* parameter = computation_->parameter_instruction(0);
    ShapeUtil::ForEachLeafShape(
        parameter->shape(), [&](const Shape&, const ShapeIndex& index) {
          const std::vector<int>& old_ids = memory_->Sources(parameter, index);
          const std::vector<int>& new_ids =
              memory_->Sources(computation_->root_instruction(), index);
          if (new_ids == old_ids) return;  // passed through
          int writer = n_;
          for (int id : new_ids) {
            writer = std::min(writer, std::max(0, memory_->buffers()[id].def_pos));
          }
          for (int id : old_ids) mark(id, writer - 1, writer);
        });
  }
  if (computation_ != module_->entry_computation()) return;
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
        for (int id : memory_->AllSources(parameter)) {
          mark(id, writer - 1, writer);
        }
      });
}

absl::Status Planner::Init() {
  sequence_ = module_->schedule().sequence(computation_).instructions();
  n_ = static_cast<int>(sequence_.size());
  TF_ASSIGN_OR_RETURN(auto called, CalledComputationPeaks(*module_, size_fn_));
  TF_ASSIGN_OR_RETURN(
      ComputationMemory memory,
      ComputationMemory::Build(
          computation_, sequence_,
          /*is_entry=*/computation_ == module_->entry_computation(), size_fn_,
          called));
  memory_ = std::make_unique<ComputationMemory>(std::move(memory));
  for (const TrackedBuffer& b : memory_->buffers()) {
    AddBuffer(b.size, b.def_pos, memory_->LastPosition(b), b.live_to_end);
  }
  for (int pos = 0; pos < n_; ++pos) {
    const HloInstruction* reader = sequence_[pos];
    // A get-tuple-element reads only the element it forwards: the other
    // outputs of a multi-output producer may die before it runs.
    if (reader->opcode() == HloOpcode::kGetTupleElement) {
      for (int id : memory_->AllSources(reader)) buffer_reads_[id].insert(pos);
      continue;
    }
    for (const HloInstruction* operand : reader->unique_operands()) {
      for (int id : memory_->AllSources(operand)) {
        buffer_reads_[id].insert(pos);
      }
    }
  }
  for (int id = 0; id < static_cast<int>(buffer_reads_.size()); ++id) {
    // Whatever else the tracker counted as a use stays a read for good.
    if (buffer_reads_[id].empty() || *buffer_reads_[id].rbegin() < End(id)) {
      buffer_reads_[id].insert(End(id));
    }
  }
  defined_bytes_.assign(n_, 0);
  for (const TrackedBuffer& b : memory_->buffers()) {
    if (b.def_pos >= 0 && b.def_pos < n_) defined_bytes_[b.def_pos] += b.size;
  }
  values_by_def_.assign(n_, {});
  clones_at_slot_.assign(n_, {});
  MarkOverwrittenBuffers();
  if (config_.chains) {
    articulation_ = ArticulationPoints(*computation_);
    result_.articulation_points = static_cast<int>(articulation_.size());
  }
  for (int pos = 0; pos < n_; ++pos) {
    HloInstruction* instruction = sequence_[pos];
    switch (ClassifyProducer(instruction)) {
      case ProducerKind::kNotRecomputable:
        break;
      case ProducerKind::kArray: {
        const std::vector<int>& ids = memory_->Sources(instruction, {});
        if (ids.size() != 1) break;
        AddInitialValue(instruction, /*tuple_index=*/-1, {instruction}, ids[0],
                        pos);
        break;
      }
      case ProducerKind::kMultiOutput:
        AddMultiOutputValues(instruction, pos);
        break;
    }
  }
  mem_ = std::make_unique<RangeMaxTree>(memory_->profile());
  result_.initial_peak_bytes = mem_->Max();
  return absl::OkStatus();
}

void Planner::AddInitialValue(HloInstruction* producer, int64_t tuple_index,
                              const std::vector<HloInstruction*>& roots,
                              int buffer, int pos) {
  const int b = buffer;
  if (memory_->buffers()[b].defining != producer) return;
  if (buffer_live_to_end_[b]) return;
  if (BufferSize(b) <= config_.min_candidate_bytes) return;
  Value v;
  v.instruction = roots.front();
  v.producer = producer;
  v.tuple_index = tuple_index;
  v.origin = roots.front();
  v.buffer = b;
  v.def = pos;
  if (tuple_index >= 0) {
    for (int k : memory_->AllSources(producer)) {
      if (k != b) v.transient += BufferSize(k);
    }
  }
  // The group: the roots and every bitcast of them, transitively.
  std::vector<HloInstruction*> group = roots;
  for (size_t i = 0; i < group.size(); ++i) {
    if (i < roots.size() && group[i] != producer &&
        !group[i]->control_successors().empty()) {
      v.movable = false;
    }
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
  v.cost = RecomputeCost(costs_, *producer);
  if (CompactShape(v.instruction->shape(), size_fn_).has_value()) {
    ++result_.compressible;
  }
  const int index = static_cast<int>(values_.size());
  values_.push_back(std::move(v));
  for (HloInstruction* member : group) value_of_[member] = index;
  versions_[roots.front()].push_back(index);
  values_by_def_[pos].push_back(index);
}

void Planner::AddMultiOutputValues(HloInstruction* producer, int pos) {
  // A user of the whole tuple (a tuple, the root) would still need every
  // element where it is: then no element moves.
  if (producer == computation_->root_instruction()) return;
  std::vector<std::vector<HloInstruction*>> readers(
      producer->shape().tuple_shapes().size());
  for (HloInstruction* user : producer->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return;
    readers[user->tuple_index()].push_back(user);
  }
  for (int64_t i = 0; i < static_cast<int64_t>(readers.size()); ++i) {
    if (readers[i].empty()) continue;  // scratch, or an unused output
    const std::vector<int>& ids = memory_->Sources(producer, {i});
    if (ids.size() != 1) continue;
    AddInitialValue(producer, i, readers[i], ids[0], pos);
  }
}

bool Planner::ProducerUnused(const HloInstruction* producer) const {
  if (producer == computation_->root_instruction()) return false;
  for (const HloInstruction* user : producer->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return false;
    auto it = value_of_.find(user);
    if (it != value_of_.end() && values_[it->second].producer == producer) {
      if (!values_[it->second].dead) return false;
    } else if (user->user_count() > 0 ||
               user == computation_->root_instruction()) {
      return false;
    }
  }
  return true;
}

const std::vector<int>& Planner::BuffersOf(
    const HloInstruction* instruction) const {
  auto it = extra_sources_.find(instruction);
  if (it != extra_sources_.end()) return it->second;
  auto cached = all_sources_.find(instruction);
  if (cached == all_sources_.end()) {
    cached =
        all_sources_.emplace(instruction, memory_->AllSources(instruction)).first;
  }
  return cached->second;
}

HloInstruction* Planner::ChooseOperand(HloInstruction* operand,
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
    // Same shape is guaranteed: every version copies the same producer.
    if (End(v.buffer) > best_end) {
      best = v.instruction;
      best_end = End(v.buffer);
    }
  }
  return best;
}

bool Planner::Movable(int index, int p, int& first_late,
                      int& horizon) const {
  const Value& v = values_[index];
  if (v.dead || !v.movable) return false;
  if (v.def >= p) {
    horizon = std::min(horizon, v.def + 1);
    return false;
  }
  if (v.generation >= config_.max_generations) return false;
  const int b = v.buffer;
  if (buffer_live_to_end_[b] || End(b) <= p) return false;
  horizon = std::min(horizon, End(b));
  first_late = n_;
  for (const Use& use : v.uses) {
    if (use.pos == p) {
      horizon = std::min(horizon, p + 1);
      return false;  // needed right here
    }
    if (use.pos > p) first_late = std::min(first_late, use.pos);
  }
  horizon = std::min(horizon, first_late);
  return first_late < n_;
}

bool Planner::ChainLink(int index) const {
  const Value& v = values_[index];
  return !v.dead && v.generation < config_.max_generations &&
         !articulation_.contains(v.origin);
}

bool Planner::CollectOperands(int index, int p, int u, bool chains,
                              ChainSearch& search) const {
  for (HloInstruction* operand : values_[index].producer->operands()) {
    HloInstruction* chosen = ChooseOperand(operand, u);
    // No move is applied while scoring: the reference stays valid.
    const std::vector<int>& ids = BuffersOf(chosen);
    bool held_across_p = false;
    for (int k : ids) {
      if (buffer_overwritten_at_[k] < u) return false;
      if (BufferSize(k) > 0 && !buffer_live_to_end_[k]) {
        if (End(k) < p) {
          held_across_p = true;
        } else {
          search.horizon = std::min(search.horizon, End(k) + 1);
        }
      }
    }
    // `in_chain` holds the value, the links kept and the links being tried
    // on the way down: the chain would have one member more. Bounding by it
    // (not by the links kept, which grow only on the way back up) bounds the
    // depth of the search too.
    if (held_across_p && chains &&
        static_cast<int>(search.in_chain.size()) + 1 <=
            config_.max_chain_length) {
      auto it = value_of_.find(chosen);
      if (it != value_of_.end() && values_[it->second].instruction == chosen &&
          ChainLink(it->second)) {
        const int link = it->second;
        if (search.in_chain.contains(link)) continue;
        const size_t chain_mark = search.chain.size();
        const size_t seen_mark = search.seen_log.size();
        const int64_t extension_mark = search.extension;
        search.in_chain.insert(link);
        if (CollectOperands(link, p, u, chains, search)) {
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
      if (BufferSize(k) == 0 || buffer_live_to_end_[k]) continue;
      if (End(k) < p) search.extension += BufferSize(k);
    }
  }
  return true;
}

bool Planner::EvaluateRecompute(int index, int p, bool chains, Candidate& out,
                                int& horizon) const {
  int first_late = 0;
  if (!Movable(index, p, first_late, horizon)) return false;
  ChainSearch search;
  search.in_chain.insert(index);
  search.horizon = horizon;
  const bool clonable = CollectOperands(index, p, first_late, chains, search);
  horizon = search.horizon;
  if (!clonable) return false;
  std::vector<int>& chain = search.chain;
  if (chains && chain.empty()) return false;  // same as the plain move
  chain.push_back(index);
  const int64_t gain = BufferSize(values_[index].buffer) - search.extension;
  if (gain <= 0) return false;
  out = Candidate();
  out.kind = MoveKind::kRecompute;
  out.value = index;
  out.first_late = first_late;
  out.gain = gain;
  for (int member : chain) out.cost += ValueCost(member);
  out.chain = std::move(chain);
  return true;
}

bool Planner::EvaluateCompress(int index, int p, Candidate& out,
                               int& horizon) const {
  int first_late = 0;
  if (!Movable(index, p, first_late, horizon)) return false;
  const Value& v = values_[index];
  std::optional<Shape> compact = CompactShape(v.instruction->shape(), size_fn_);
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
  const int64_t size = BufferSize(v.buffer);
  const int64_t compact_size = size_fn_(*compact);
  out = Candidate();
  out.kind = MoveKind::kCompress;
  out.value = index;
  out.first_late = first_late;
  out.gain = size - compact_size;
  out.cost = 2 * CopyCost(size, compact_size);
  out.compress_slot = slot;
  out.compact = std::move(compact);
  return true;
}

void Planner::Activate(int index) {
  Value& v = values_[index];
  if (v.active || v.dead) return;
  v.active = true;
  active_.push_back(index);
}

HloInstruction* Planner::BitcastOf(HloInstruction* clone, const Shape& shape,
                                   int slot) {
  auto key = std::make_pair(static_cast<const HloInstruction*>(clone),
                            ShapeUtil::HumanStringWithLayout(shape));
  auto it = bitcasts_.find(key);
  if (it != bitcasts_.end()) return it->second;
  HloInstruction* bitcast = computation_->AddInstruction(
      HloInstruction::CreateBitcast(shape, clone));
  bitcasts_[key] = bitcast;
  std::vector<int> sources = extra_sources_[clone];  // copy: the map may grow
  extra_sources_[bitcast] = std::move(sources);
  value_of_[bitcast] = value_of_[clone];
  clones_at_slot_[slot].push_back(bitcast);
  current_->new_instructions.push_back(bitcast);
  ++result_.instructions_added;
  return bitcast;
}

int Planner::RegisterValue(HloInstruction* instruction,
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
  const int index = static_cast<int>(values_.size());
  values_.push_back(std::move(fresh));
  value_of_[instruction] = index;
  versions_[origin].push_back(index);
  values_by_def_[def].push_back(index);
  current_->new_values.push_back(index);
  return index;
}

HloInstruction* Planner::PlaceClone(
    int index, int u,
    const absl::flat_hash_map<const HloInstruction*, HloInstruction*>& chain,
    int& fresh_index) {
  const Value original = values_[index];  // copy: values_ grows below
  const int64_t size = BufferSize(original.buffer);
  HloInstruction* clone = computation_->AddInstruction(
      original.producer->Clone("remat"));
  for (HloInstruction* pred : original.producer->control_predecessors()) {
    (void)pred->AddControlDependencyTo(clone);
  }
  const int buffer = AddBuffer(size, u, u, /*live_to_end=*/false);
  AddMemory(u, u, size);
  clones_at_slot_[u].push_back(clone);
  current_->new_instructions.push_back(clone);
  ++result_.instructions_added;
  // An element is re-extracted from the clone; its other outputs are only
  // the clone's transient (CountChainTransient).
  HloInstruction* provider = clone;
  if (original.tuple_index >= 0) {
    provider = computation_->AddInstruction(
        HloInstruction::CreateGetTupleElement(
            clone->shape().tuple_shapes(original.tuple_index), clone,
            original.tuple_index),
        absl::StrCat(original.origin->name(), ".remat"));
    clones_at_slot_[u].push_back(provider);
    current_->new_instructions.push_back(provider);
    ++result_.instructions_added;
  }
  extra_sources_[provider] = {buffer};
  fresh_index = RegisterValue(provider, original.origin, buffer, u,
                              original.generation + 1, original.cost);
  values_[fresh_index].producer = clone;
  values_[fresh_index].tuple_index = original.tuple_index;
  values_[fresh_index].transient = original.transient;

  // Operands: a clone of the same chain, or the version of the value that
  // lives longest, held until the clone runs.
  for (int64_t k = 0; k < clone->operand_count(); ++k) {
    HloInstruction* operand = clone->mutable_operand(k);
    HloInstruction* chosen = ChooseOperand(operand, u);
    auto link = chain.find(chosen);
    if (link != chain.end()) {
      (void)clone->ReplaceOperandWith(k, link->second);
      const Value& link_value = values_[value_of_[link->second]];
      values_[value_of_[link->second]].uses.push_back(
          {clone, k, link->second, u});
      AddRead(link_value.buffer, u);
      continue;
    }
    if (chosen != operand) (void)clone->ReplaceOperandWith(k, chosen);
    auto vit = value_of_.find(chosen);
    if (vit != value_of_.end()) {
      values_[vit->second].uses.push_back({clone, k, chosen, u});
      current_->operand_values.push_back(vit->second);
      if (values_[vit->second].def < current_p_) Activate(vit->second);
    }
    GuardReads(clone, chosen);
    for (int kb : BuffersOf(chosen)) {
      if (BufferSize(kb) == 0 || buffer_live_to_end_[kb]) continue;
      Touch(kb);
      AddRead(kb, u);
    }
  }
  pins_.push_back({clone, current_p_});
  return provider;
}

void Planner::GuardReads(HloInstruction* reader, const HloInstruction* read) {
  for (int k : BuffersOf(read)) {
    if (buffer_writer_[k] != nullptr && buffer_writer_[k] != reader) {
      guards_.push_back({reader, buffer_writer_[k]});
    }
  }
}

HloInstruction* Planner::PlaceCopy(HloInstruction* source, const Shape& shape,
                                   int slot, int& buffer) {
  HloInstruction* copy = computation_->AddInstruction(
      HloInstruction::CreateUnary(shape, HloOpcode::kCopy, source));
  GuardReads(copy, source);
  for (int k : BuffersOf(source)) {
    Touch(k);
    AddRead(k, slot);
  }
  const int64_t size = size_fn_(shape);
  buffer = AddBuffer(size, slot, slot, /*live_to_end=*/false);
  AddMemory(slot, slot, size);
  extra_sources_[copy] = {buffer};
  clones_at_slot_[slot].push_back(copy);
  current_->new_instructions.push_back(copy);
  ++result_.instructions_added;
  return copy;
}

void Planner::RedirectLateUses(int original, HloInstruction* replacement,
                               int fresh_index, int p, int u) {
  const std::vector<Use> uses = values_[original].uses;
  HloInstruction* read = values_[original].instruction;
  const int b = values_[original].buffer;
  const int fresh_buffer = values_[fresh_index].buffer;
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
            : BitcastOf(replacement, use.via->shape(), u);
    current_->redirects.push_back(
        {use.user, use.operand_no, use.user->mutable_operand(use.operand_no)});
    (void)use.user->ReplaceOperandWith(use.operand_no, target);
    values_[fresh_index].uses.push_back(
        {use.user, use.operand_no, target, use.pos});
    AddRead(fresh_buffer, use.pos);
    RemoveRead(b, use.pos);
  }
  Value& v = values_[original];
  v.uses = std::move(early);
  if (!v.uses.empty()) return;
  v.dead = true;
  const HloInstruction* producer = v.producer;
  const int def = v.def;
  if (v.tuple_index < 0) {
    // No use left before the trigger point: the producer goes away, and
    // with it its reads of its own operands.
    for (const HloInstruction* operand : producer->unique_operands()) {
      for (int k : BuffersOf(operand)) RemoveRead(k, def);
    }
    AddMemory(def, End(b), -BufferSize(b));
    SetEnd(b, def);
    buffer_freed_[b] = true;
    current_->freed.push_back(b);
    return;
  }
  // An element: the producer may still run for its other outputs, and
  // writes this one too, which dies at once.
  if (End(b) > def) AddMemory(def + 1, End(b), -BufferSize(b));
  SetEnd(b, def);
  buffer_freed_[b] = true;
  current_->freed.push_back(b);
  if (!ProducerUnused(producer)) return;
  for (const HloInstruction* operand : producer->unique_operands()) {
    for (int k : BuffersOf(operand)) RemoveRead(k, def);
  }
  // The moves that killed the other elements cannot be undone alone now.
  for (const HloInstruction* user : producer->users()) {
    auto it = value_of_.find(user);
    if (it != value_of_.end()) Touch(values_[it->second].buffer);
  }
}

void Planner::Apply(const Candidate& candidate, int p) {
  ++epoch_;
  const int u = candidate.first_late;
  moves_.emplace_back();
  current_ = &moves_.back();
  current_->kind = candidate.kind;
  current_->original = candidate.value;
  current_->original_uses = values_[candidate.value].uses;
  current_->original_dead = values_[candidate.value].dead;
  current_->bytes_saved = candidate.gain;
  current_->cost = candidate.cost;
  // Touch the moved buffer first so that its old toucher is restored on undo.
  Touch(values_[candidate.value].buffer);

  HloInstruction* provider = nullptr;
  if (candidate.kind == MoveKind::kRecompute) {
    absl::flat_hash_map<const HloInstruction*, HloInstruction*> chain;
    std::vector<int> fresh_values;
    bool transient = false;
    int fresh = -1;
    for (int member : candidate.chain) {
      provider = PlaceClone(member, u, chain, fresh);
      chain[values_[member].instruction] = provider;
      fresh_values.push_back(fresh);
      transient |= values_[fresh].transient > 0;
    }
    if (fresh_values.size() > 1 || transient) {
      CountChainTransient(fresh_values, u);
    }
    RedirectLateUses(candidate.value, provider, fresh, p, u);
    current_->clones = static_cast<int>(candidate.chain.size());
    result_.recomputed += current_->clones;
  } else {
    HloInstruction* producer = values_[candidate.value].instruction;
    int compact_buffer = -1, expand_buffer = -1;
    HloInstruction* compact =
        PlaceCopy(producer, *candidate.compact, candidate.compress_slot,
                  compact_buffer);
    values_[candidate.value].uses.push_back(
        {compact, 0, producer, candidate.compress_slot});
    provider = PlaceCopy(compact, producer->shape(), u, expand_buffer);
    const int fresh = RegisterValue(
        provider, provider, expand_buffer, u,
        values_[candidate.value].generation + 1,
        CopyCost(BufferSize(expand_buffer), BufferSize(compact_buffer)));
    pins_.push_back({provider, p});
    RedirectLateUses(candidate.value, provider, fresh, p, u);
    ++result_.compressed;
  }

  RematDecision d;
  d.action = candidate.kind == MoveKind::kRecompute ? "recompute" : "compress";
  d.value = std::string(values_[candidate.value].producer->name());
  d.result = std::string(provider->name());
  d.at = std::string(sequence_[p]->name());
  d.before = std::string(sequence_[u]->name());
  for (const HloInstruction* added : current_->new_instructions) {
    d.instructions.push_back(std::string(added->name()));
  }
  d.bytes_saved = candidate.gain;
  d.cost = candidate.cost;
  current_->decision = static_cast<int>(result_.decisions.size());
  result_.decisions.push_back(std::move(d));
  current_ = nullptr;
}

void Planner::CountChainTransient(const std::vector<int>& fresh, int u) {
  // The clones of a chain run one after another at slot u and each
  // intermediate dies once its last reader in the chain has run: slot u
  // holds the chain's own peak for a moment, not the sum of its values. A
  // clone's transient outputs (scratch, workspace) live only while it runs.
  const int count = static_cast<int>(fresh.size());
  absl::flat_hash_map<const HloInstruction*, int> index;
  for (int i = 0; i < count; ++i) index[values_[fresh[i]].instruction] = i;
  std::vector<int> last_reader(count, -1);
  for (int i = 0; i < count; ++i) {
    for (const HloInstruction* operand : values_[fresh[i]].producer->operands()) {
      auto it = index.find(operand);
      if (it != index.end()) last_reader[it->second] = i;
    }
  }
  auto size_of = [&](int i) { return BufferSize(values_[fresh[i]].buffer); };
  int64_t live = 0, peak = 0, intermediates = 0;
  for (int i = 0; i < count; ++i) {
    live += size_of(i);
    peak = std::max(peak, live + values_[fresh[i]].transient);
    for (int j = 0; j < i; ++j) {
      if (last_reader[j] == i) live -= size_of(j);
    }
  }
  // Before the chain's peak the instruction at u has not yet allocated its
  // own outputs; after it, only the chain's last value is left.
  const int root = count - 1;
  for (int i = 0; i < root; ++i) intermediates += size_of(i);
  AddMemory(u, u,
            std::max<int64_t>(0, peak - defined_bytes_[u] - size_of(root)) -
                intermediates);
}

void Planner::Revert(AppliedMove& move) {
  ++epoch_;
  for (auto it = move.memory_adds.rbegin(); it != move.memory_adds.rend();
       ++it) {
    mem_->Add(std::get<0>(*it), std::get<1>(*it), -std::get<2>(*it));
  }
  for (auto it = move.old_ends.rbegin(); it != move.old_ends.rend(); ++it) {
    buffer_end_[it->first] = it->second;
  }
  for (int b : move.freed) buffer_freed_[b] = false;
  for (auto it = move.reads.rbegin(); it != move.reads.rend(); ++it) {
    const auto& [b, slot, added] = *it;
    if (added) {
      auto read = buffer_reads_[b].find(slot);
      if (read != buffer_reads_[b].end()) buffer_reads_[b].erase(read);
    } else {
      buffer_reads_[b].insert(slot);
    }
  }
  for (auto it = move.old_touches.rbegin(); it != move.old_touches.rend();
       ++it) {
    buffer_touched_by_[it->first] = it->second;
  }
  for (auto it = move.redirects.rbegin(); it != move.redirects.rend(); ++it) {
    (void)it->user->ReplaceOperandWith(it->operand_no, it->old_operand);
  }
  Value& original = values_[move.original];
  original.uses = move.original_uses;
  original.dead = move.original_dead;
  const absl::flat_hash_set<const HloInstruction*> added(
      move.new_instructions.begin(), move.new_instructions.end());
  for (int index : move.new_values) {
    values_[index].dead = true;
    values_[index].uses.clear();
    // A value taken back never comes back: ChooseOperand need not see it
    // again (retried plans would otherwise pile up dead versions).
    auto vit = versions_.find(values_[index].origin);
    if (vit != versions_.end()) {
      std::vector<int>& list = vit->second;
      list.erase(std::remove(list.begin(), list.end(), index), list.end());
    }
  }
  for (int index : move.operand_values) {
    std::vector<Use>& uses = values_[index].uses;
    uses.erase(std::remove_if(uses.begin(), uses.end(),
                              [&](const Use& use) {
                                return added.contains(use.user);
                              }),
               uses.end());
  }
  for (auto it = bitcasts_.begin(); it != bitcasts_.end();) {
    if (added.contains(it->second)) {
      bitcasts_.erase(it++);
    } else {
      ++it;
    }
  }
  removed_.insert(added.begin(), added.end());
  result_.instructions_added -= static_cast<int>(move.new_instructions.size());
  result_.recomputed -= move.clones;
  if (move.kind == MoveKind::kCompress) --result_.compressed;
  move.undone = true;
}

bool Planner::Undoable(int move_index) const {
  const AppliedMove& move = moves_[move_index];
  if (move.undone) return false;
  for (const auto& [buffer, unused] : move.old_touches) {
    if (buffer_touched_by_[buffer] != move_index) return false;
  }
  return true;
}

void Planner::Score(int index, int p) {
  ScoreCache& cache = scores_[index];
  // Valid from the position it was scored at (a new sweep starts again at
  // 0, possibly with nothing applied in between) up to its horizon.
  if (cache.epoch == epoch_ && cache.from <= p && p < cache.until) return;
  cache.candidates.clear();
  int horizon = n_;
  Candidate c;
  if (config_.recompute) {
    if (EvaluateRecompute(index, p, /*chains=*/false, c, horizon)) {
      cache.candidates.push_back(std::move(c));
    }
    if (config_.chains && EvaluateRecompute(index, p, true, c, horizon)) {
      cache.candidates.push_back(std::move(c));
    }
  }
  if (config_.compress && EvaluateCompress(index, p, c, horizon)) {
    cache.candidates.push_back(std::move(c));
  }
  cache.epoch = epoch_;
  cache.from = p;
  cache.until = horizon;
}

void Planner::Sweep(int64_t target) {
  if (target > 0 && mem_->Max() <= target) return;
  const int max_applications = 4 * n_ + 16;
  int applications = 0;
  for (int p = 0; p < n_; ++p) {
    current_p_ = p;
    if (p > 0) {
      for (int index : values_by_def_[p - 1]) Activate(index);
    }
    absl::flat_hash_set<int> rejected;  // moves that raised the peak at p
    while (mem_->At(p) > target && applications < max_applications) {
      const Candidate* winner = nullptr;
      double best_score = -1;
      auto consider = [&](const Candidate& c) {
        const double score = static_cast<double>(c.gain) / c.cost;
        if (score > best_score) {
          best_score = score;
          winner = &c;
        }
      };
      if (scores_.size() < values_.size()) scores_.resize(values_.size());
      size_t keep = 0;
      for (size_t i = 0; i < active_.size(); ++i) {
        const int index = active_[i];
        Value& v = values_[index];
        if (v.dead || End(v.buffer) < p) {
          v.active = false;  // re-activated if a clone extends it
          continue;
        }
        active_[keep++] = index;
        if (rejected.contains(index)) continue;
        Score(index, p);
        for (const Candidate& c : scores_[index].candidates) consider(c);
      }
      active_.resize(keep);
      if (winner == nullptr) break;
      const Candidate best = *winner;  // Apply grows the caches
      const int64_t peak_before = mem_->Max();
      const int epoch_before = epoch_;
      Apply(best, p);
      ++applications;
      if (mem_->Max() > std::max(target, peak_before)) {
        // The clones or the longer-lived operands made another point worse
        // than the peak: take the move back and try the next one.
        Revert(moves_.back());
        moves_.pop_back();
        result_.decisions.pop_back();
        rejected.insert(best.value);
        // Everything scoring reads is as it was before the move (its values
        // are dead and out of `versions_`): the scores still hold.
        epoch_ = epoch_before;
      }
    }
  }
}

void Planner::UndoChains(int64_t target) {
  const int64_t limit = std::max(target, mem_->Max());
  std::vector<int> order;
  for (int m = 0; m < static_cast<int>(moves_.size()); ++m) {
    if (moves_[m].kind == MoveKind::kRecompute) order.push_back(m);
  }
  // Costliest per byte saved first.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return moves_[a].cost * std::max<int64_t>(1, moves_[b].bytes_saved) >
           moves_[b].cost * std::max<int64_t>(1, moves_[a].bytes_saved);
  });
  for (int m : order) {
    if (!Undoable(m)) continue;
    AppliedMove& move = moves_[m];
    for (const auto& [lo, hi, delta] : move.memory_adds) mem_->Add(lo, hi, -delta);
    const bool fits = mem_->Max() <= limit;
    for (const auto& [lo, hi, delta] : move.memory_adds) mem_->Add(lo, hi, delta);
    if (!fits) continue;
    Revert(move);
    RematDecision d = result_.decisions[move.decision];
    d.action = "undo path";
    result_.decisions.push_back(std::move(d));
    ++result_.undone;
  }
}

int64_t Planner::Plan(int64_t target) {
  Sweep(target);
  if (config_.chains) UndoChains(target);
  result_.planned_peak_bytes = mem_->Max();
  return result_.planned_peak_bytes;
}

void Planner::RevertAll() {
  for (int m = static_cast<int>(moves_.size()) - 1; m >= 0; --m) {
    if (!moves_[m].undone) Revert(moves_[m]);
  }
  moves_.clear();
  result_.decisions.clear();
  result_.undone = 0;
  result_.planned_peak_bytes = mem_->Max();
  for (int index : active_) values_[index].active = false;
  active_.clear();
}

absl::Status Planner::RemoveInstructions(
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

Planner::FinalOrder Planner::ComputeFinalOrder() const {
  // Instructions of moves taken back are gone (or about to be): they may be
  // the last users of a producer that is dead otherwise.
  auto readers = [&](const HloInstruction* instruction) {
    std::vector<const HloInstruction*> out;
    for (const HloInstruction* user : instruction->users()) {
      if (!removed_.contains(user)) out.push_back(user);
    }
    return out;
  };
  // A producer whose every use moved to a clone dies, with the bitcasts of
  // it that nobody reads any more.
  const HloInstruction* root = computation_->root_instruction();
  FinalOrder order;
  absl::flat_hash_set<const HloInstruction*>& dead = order.dead;
  for (const Value& v : values_) {
    if (!v.dead || removed_.contains(v.instruction) || v.instruction == root) {
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
            user != computation_->root_instruction()) {
          group.push_back(user);
        } else {
          unused = false;
        }
      }
    }
    if (unused) dead.insert(group.begin(), group.end());
  }
  // A multi-output producer goes once none of its outputs is read.
  for (const Value& v : values_) {
    if (v.tuple_index < 0 || !v.dead || removed_.contains(v.producer) ||
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
  for (int slot = 0; slot < n_; ++slot) {
    // Instructions added at one slot may read each other: operands first.
    const std::vector<HloInstruction*>& group = clones_at_slot_[slot];
    absl::flat_hash_set<const HloInstruction*> in_group(group.begin(),
                                                        group.end());
    std::vector<std::pair<HloInstruction*, size_t>> stack;
    for (HloInstruction* start : group) {
      if (placed.contains(start) || dead.contains(start) ||
          removed_.contains(start)) {
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
    HloInstruction* original = sequence_[slot];
    if (!dead.contains(original)) sequence.push_back(original);
  }
  return order;
}

absl::StatusOr<std::unique_ptr<HloModule>> Planner::PlannedCopy() {
  const FinalOrder order = ComputeFinalOrder();
  // Cloning verifies the schedule, which must name every instruction: the
  // planned order, then what is about to go (users last). Materialize sets
  // the real order.
  HloInstructionSequence everything = order.sequence;
  for (HloInstruction* instruction :
       computation_->MakeInstructionPostOrder()) {
    if (removed_.contains(instruction) || order.dead.contains(instruction)) {
      everything.push_back(instruction);
    }
  }
  module_->schedule().set_sequence(computation_, std::move(everything));
  // Clone("") keeps every name, which is how instructions are found again.
  std::unique_ptr<HloModule> copy = module_->Clone("");
  HloComputation* computation =
      copy->GetComputationWithName(computation_->name());
  if (computation == nullptr) {
    return absl::InternalError(absl::StrCat(
        "rematerialization: the planned copy lost ", computation_->name()));
  }
  absl::flat_hash_map<absl::string_view, HloInstruction*> by_name;
  for (HloInstruction* instruction : computation->instructions()) {
    by_name[instruction->name()] = instruction;
  }
  auto find = [&](const HloInstruction* original)
      -> absl::StatusOr<HloInstruction*> {
    auto it = by_name.find(original->name());
    if (it == by_name.end()) {
      return absl::InternalError(absl::StrCat(
          "rematerialization: ", original->name(), " is not in the copy"));
    }
    return it->second;
  };
  absl::flat_hash_set<const HloInstruction*> doomed;
  for (const HloInstruction* instruction : removed_) {
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

absl::StatusOr<PlannerResult> Planner::Materialize() {
  TF_RETURN_IF_ERROR(RemoveInstructions(computation_, removed_));
  FinalOrder order = ComputeFinalOrder();
  const absl::flat_hash_set<const HloInstruction*>& dead = order.dead;
  result_.instructions_removed = static_cast<int>(dead.size());
  TF_RETURN_IF_ERROR(RemoveInstructions(computation_, dead));
  module_->schedule().set_sequence(computation_, std::move(order.sequence));

  // Keep each clone after the point whose memory it relieves, so that a later
  // scheduler cannot hoist it back next to the original (jax PR #2391).
  for (const auto& [clone, trigger] : pins_) {
    HloInstruction* anchor = sequence_[trigger];
    if (removed_.contains(clone) || dead.contains(clone) ||
        dead.contains(anchor)) {
      continue;
    }
    if (anchor->opcode() == HloOpcode::kParameter ||
        anchor->opcode() == HloOpcode::kConstant) {
      continue;
    }
    TF_RETURN_IF_ERROR(anchor->AddControlDependencyTo(clone));
    ++result_.pinned;
  }
  for (const auto& [reader, writer] : guards_) {
    if (removed_.contains(reader) || dead.contains(reader) ||
        dead.contains(writer)) {
      continue;
    }
    TF_RETURN_IF_ERROR(reader->AddControlDependencyTo(writer));
  }
  // Fusion clones brought their own fused computations; those of clones
  // taken back (or of producers that died) are unreachable now.
  if (!removed_.empty() || !dead.empty()) {
    TF_RETURN_IF_ERROR(module_->RemoveUnusedComputations());
  }
  return result_;
}

}  // namespace

absl::StatusOr<PlannerResult> RunRematPlanner(HloModule* module,
                                              const PlannerConfig& config,
                                              const SizeFunction& size_fn,
                                              const HloCostAnalysis& costs) {
  return RunRematPlanner(module, module->entry_computation(), config, size_fn,
                         costs);
}

absl::StatusOr<PlannerResult> RunRematPlanner(HloModule* module,
                                              HloComputation* computation,
                                              const PlannerConfig& config,
                                              const SizeFunction& size_fn,
                                              const HloCostAnalysis& costs) {
  if (!module->has_schedule() ||
      !module->schedule().is_computation_scheduled(computation)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rematerialization planner needs a schedule for ", computation->name()));
  }
  Planner planner(module, computation, config, size_fn, costs);
  TF_RETURN_IF_ERROR(planner.Init());
  const int64_t target = config.target_bytes;
  int64_t best_peak = planner.Plan(target);
  if (target > 0 && best_peak > target && planner.initial_peak() > target) {
    // Missed: a greedy plan aimed too low can end above one aimed higher
    // (its clones keep operands alive everywhere). Try a few targets between
    // the budget and the starting peak and keep the lowest plan.
    int64_t best_target = target, last_target = target;
    const int64_t room = planner.initial_peak() - target;
    for (int step = 1; step < kTargetLadderSteps; ++step) {
      const int64_t rung = target + room * step / kTargetLadderSteps;
      // The sweep stops lowering a position once it is at the rung: a plan
      // aimed at or above the best peak so far cannot end below it. (Rungs
      // only rise, so the rest are skipped too.)
      if (rung >= best_peak) break;
      planner.RevertAll();
      last_target = rung;
      const int64_t peak = planner.Plan(last_target);
      if (peak < best_peak) {
        best_peak = peak;
        best_target = last_target;
      }
    }
    if (best_target != last_target) {
      planner.RevertAll();
      best_peak = planner.Plan(best_target);
    }
  }
  if (config.keep_plan != nullptr && planner.has_moves()) {
    TF_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> planned,
                        planner.PlannedCopy());
    TF_ASSIGN_OR_RETURN(bool keep, config.keep_plan(*planned));
    if (!keep) {
      planner.RevertAll();
      planner.set_rejected();
    }
  }
  return planner.Materialize();
}

}  // namespace remat
}  // namespace xla
