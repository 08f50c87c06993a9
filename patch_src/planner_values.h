// The planner's state between moves: the values it may move (an array, or one
// element of a multi-output producer, seen through its bitcasts and
// get-tuple-elements), their uses and versions, the moves applied so far
// with what each changed, and the liveness model they act on.
//
// One class so that scoring (planner_scoring.h) can take it read-only and
// the edits (planner_edits.h) and the planner (planner.h) can share it
// without owning each other; the values and the moves are kept by their own
// classes (value_table.h, move_log.h).
#ifndef XLA_SERVICE_REMAT_PLANNER_VALUES_H_
#define XLA_SERVICE_REMAT_PLANNER_VALUES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/remat/fused_computation_recycler.h"
#include "xla/service/remat/judging_copy.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/move_log.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/size_function.h"
#include "xla/service/remat/value_table.h"
#include "xla/shape.h"

namespace xla {
namespace remat {

// Two copies of a value cost what they move.
inline double CopyCost(int64_t bytes_in, int64_t bytes_out) {
  return 1.0 + static_cast<double>(bytes_in + bytes_out) / 4.0;
}

struct Candidate {
  MoveKind kind = MoveKind::kRecompute;
  int value = -1;
  int first_late = 0;
  int64_t gain = 0;
  double cost = 0;
  double flops = 0;  // as ModuleFlops counts them: a copied element is one
  // Recompute: values cloned at first_late, operands first, `value` last.
  std::vector<int> chain;
  // Recompute: clones earlier moves placed at first_late; the chain reads
  // them where it would read another version of their values (`optimal`
  // places one stage's recomputations as one move each).
  std::vector<int> reads_placed;
  // Recompute: other values cloned at first_late after `value`, reading the
  // chain's clones (AddCompanions).
  std::vector<int> companions;
  // Recompute: the other elements of `value`'s multi-output producer that
  // the same clone serves (AddSiblings): freed for no FLOPs more.
  std::vector<int> siblings;
  // Compress: where the compact copy goes and its shape.
  int compress_slot = 0;
  std::optional<Shape> compact;
};

// What one scoring of a value read of the state: a change to any of it
// makes the score stale (score_dependencies.h).
struct ScoreReads {
  std::vector<int> buffers;
  std::vector<int> values;  // their uses, deadness, producer's operands
  std::vector<const HloInstruction*> origins;  // whose versions it compared
  void Clear() {
    buffers.clear();
    values.clear();
    origins.clear();
  }
  bool operator==(const ScoreReads& other) const {
    return buffers == other.buffers && values == other.values &&
           origins == other.origins;
  }
};

// The sweep's last scoring of one value: its candidates in the order they
// are considered. Valid while nothing it read changed and the sweep is in
// [from, until).
struct ScoreCache {
  bool valid = false;
  int from = 0;
  int until = 0;
  std::vector<Candidate> candidates;
  ScoreReads reads;
  // `reads` are filed with the readers (ScoreReaders) already: scored again
  // past its horizon, the value read the same as before.
  bool reads_filed = false;
  // The plan's state (Planner's stamp) in which the best of `candidates`
  // was applied and raised the peak elsewhere; -1 if never. The same move
  // in the same state raises it again: it is refused without applying it.
  int64_t refused_in = -1;
};

// Whose scores read what, so that a move makes stale only the scores it
// could change. Lists may hold repeats and values re-scored since: a
// spurious mark costs one re-scoring.
struct ScoreReaders {
  std::vector<std::vector<int>> of_buffer;  // by buffer: values
  std::vector<std::vector<int>> of_value;   // by value: values
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> of_origin;
};

// The planner's state between moves. Scoring reads it (const); the edits
// change it through the value table, the move log and the liveness model,
// each with its own operations; the driver owns it.
class PlannerState {
 public:
  PlannerState(HloModule* module, HloComputation* computation,
               const PlannerConfig& config, const SizeFunction& size_fn,
               const HloCostAnalysis& costs)
      : module_(module),
        computation_(computation),
        config_(config),
        size_fn_(size_fn),
        costs_(costs),
        judging_copier_(config.alias_info, config.judging_copy,
                        [this](const HloComputation* fused) {
                          return recycler_.OriginalOf(fused);
                        }) {}

  // Builds the liveness model and the value table from the computation's
  // schedule.
  absl::Status Init();

  HloModule* module() const { return module_; }
  HloComputation* computation() const { return computation_; }
  const PlannerConfig& config() const { return config_; }
  // Chains on or off for the moves scored from now on.
  void set_chains(bool chains) { config_.chains = chains; }
  void set_max_extra_flops(double flops) { config_.max_extra_flops = flops; }
  const SizeFunction& size_fn() const { return size_fn_; }
  // The memory model of the schedule Init found.
  const ComputationMemory& initial_memory() const { return *memory_; }
  const HloCostAnalysis& costs() const { return costs_; }

  // The schedule the planner works on: one slot per instruction.
  const std::vector<HloInstruction*>& sequence() const { return sequence_; }
  int slot_count() const { return static_cast<int>(sequence_.size()); }
  // What the original instruction at `slot` defines, in bytes.
  int64_t defined_bytes(int slot) const { return defined_bytes_[slot]; }
  bool IsArticulation(const HloInstruction* instruction) const {
    return articulation_.contains(instruction);
  }

  LivenessModel& liveness() { return *liveness_; }
  const LivenessModel& liveness() const { return *liveness_; }
  ValueTable& values() { return values_; }
  const ValueTable& values() const { return values_; }
  MoveLog& moves() { return moves_; }
  const MoveLog& moves() const { return moves_; }
  // The sweep's scores by value, and whose scores read what.
  std::vector<ScoreCache>& scores() { return scores_; }
  const std::vector<ScoreCache>& scores() const { return scores_; }
  ScoreReaders& score_readers() { return score_readers_; }
  PlannerResult& result() { return result_; }
  const PlannerResult& result() const { return result_; }
  // Where clones of fusions get their fused computations.
  FusedComputationRecycler& recycler() { return recycler_; }
  const FusedComputationRecycler& recycler() const { return recycler_; }
  // Makes the judge's copies (judging_copy.h), keeping what it learnt of
  // the module's fused computations from one to the next.
  JudgingCopier& judging_copier() { return judging_copier_; }

  // The slot the sweep is at: clones placed now are pinned after it.
  int sweep_slot() const { return sweep_slot_; }
  void set_sweep_slot(int slot) { sweep_slot_ = slot; }

  // The buffers an instruction's value may be in. The reference stays valid
  // until the next move adds instructions.
  const std::vector<int>& BuffersOf(const HloInstruction* instruction) const;
  // `instruction`, added by a move, holds its value in `buffers`.
  void SetBuffersOf(const HloInstruction* instruction,
                    std::vector<int> buffers) {
    added_sources_[instruction] = std::move(buffers);
  }
  // True when no use of any output of `producer` is left: it can go.
  bool ProducerUnused(const HloInstruction* producer) const;
  // `instruction`, added by the current move, runs at `slot`.
  void Place(HloInstruction* instruction, int slot) {
    moves_.Place(instruction, slot);
    ++result_.instructions_added;
  }

 private:
  void MarkOverwrittenBuffers();
  void AddValuesOf(HloInstruction* instruction, int slot);
  void AddMultiOutputValues(HloInstruction* producer, int slot);
  void AddInitialValue(HloInstruction* producer, int64_t tuple_index,
                       const std::vector<HloInstruction*>& readers, int buffer,
                       int slot);

  HloModule* module_;
  HloComputation* computation_;
  PlannerConfig config_;
  // A copy: callers pass plain functions, whose std::function would be a
  // temporary.
  const SizeFunction size_fn_;
  const HloCostAnalysis& costs_;

  std::shared_ptr<const ComputationMemory> memory_;
  std::vector<HloInstruction*> sequence_;
  std::unique_ptr<LivenessModel> liveness_;
  std::vector<int64_t> defined_bytes_;  // by the original instruction at a slot
  absl::flat_hash_set<const HloInstruction*> articulation_;
  // Buffers of instructions moves added.
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> added_sources_;
  // AllSources of original instructions, computed once (node map: stable).
  mutable absl::node_hash_map<const HloInstruction*, std::vector<int>>
      all_sources_;
  ValueTable values_;
  MoveLog moves_;
  std::vector<ScoreCache> scores_;
  ScoreReaders score_readers_;
  PlannerResult result_;
  FusedComputationRecycler recycler_;
  JudgingCopier judging_copier_;
  int sweep_slot_ = 0;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLANNER_VALUES_H_
