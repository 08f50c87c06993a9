// The planner's state between moves: the values it may move (an array, or one
// element of a multi-output producer, seen through its bitcasts and
// get-tuple-elements), their uses and versions, the moves applied so far
// with what each changed, and the liveness model they act on.
//
// One struct so that scoring (planner_scoring.h) can take it read-only and
// the edits (planner_edits.h) and the driver (remat_planner.cc) can share it
// without owning each other.
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
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/remat_planner.h"
#include "xla/service/remat/size_function.h"
#include "xla/shape.h"

namespace xla {
namespace remat {

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
  double cost = 0;   // of producing it once more
  double flops = 0;  // the FLOPs of that (cost also counts bytes moved)
};

// Two copies of a value cost what they move.
inline double CopyCost(int64_t bytes_in, int64_t bytes_out) {
  return 1.0 + static_cast<double>(bytes_in + bytes_out) / 4.0;
}

enum class MoveKind { kRecompute, kCompress };

struct Candidate {
  MoveKind kind = MoveKind::kRecompute;
  int value = -1;
  int first_late = 0;
  int64_t gain = 0;
  double cost = 0;
  double flops = 0;  // as ModuleFlops counts them: a copied element is one
  // Recompute: values cloned at first_late, operands first, `value` last.
  std::vector<int> chain;
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
};

// Whose scores read what, so that a move makes stale only the scores it
// could change. Lists may hold repeats and values re-scored since: a
// spurious mark costs one re-scoring.
struct ScoreReaders {
  std::vector<std::vector<int>> of_buffer;  // by buffer: values
  std::vector<std::vector<int>> of_value;   // by value: values
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> of_origin;
};

// Everything one move changed, so that it can be taken back.
struct AppliedMove {
  int decision = -1;
  MoveKind kind = MoveKind::kRecompute;
  LivenessUndo liveness;
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
  double flops = 0;
  bool undone = false;
};

struct PlannerState {
  PlannerState(HloModule* module, HloComputation* computation,
               const PlannerConfig& config, const SizeFunction& size_fn,
               const HloCostAnalysis& costs)
      : module(module),
        computation(computation),
        config(config),
        size_fn(size_fn),
        costs(costs) {}

  // The buffers an instruction's value may be in. The reference stays valid
  // until the next move adds instructions.
  const std::vector<int>& BuffersOf(const HloInstruction* instruction) const;
  // True when no use of any output of `producer` is left: it can go.
  bool ProducerUnused(const HloInstruction* producer) const;

  HloModule* module;
  HloComputation* computation;
  PlannerConfig config;
  const SizeFunction& size_fn;
  const HloCostAnalysis& costs;

  std::shared_ptr<const ComputationMemory> memory;
  std::vector<HloInstruction*> sequence;
  int n = 0;
  std::unique_ptr<LivenessModel> liveness;
  std::vector<int64_t> defined_bytes;  // by the original instruction at a slot
  // Clone reading a buffer, the instruction that overwrites it.
  std::vector<std::pair<HloInstruction*, HloInstruction*>> guards;
  std::vector<Value> values;
  absl::flat_hash_map<const HloInstruction*, int> value_of;
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> extra_sources;
  // AllSources of original instructions, computed once (node map: stable).
  mutable absl::node_hash_map<const HloInstruction*, std::vector<int>>
      all_sources;
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> versions;
  absl::flat_hash_set<const HloInstruction*> articulation;
  std::vector<std::vector<int>> values_by_def;
  std::vector<std::vector<HloInstruction*>> clones_at_slot;
  std::vector<std::pair<HloInstruction*, int>> pins;  // clone, trigger slot
  absl::flat_hash_map<std::pair<const HloInstruction*, std::string>,
                      HloInstruction*>
      bitcasts;
  // Instructions of moves taken back: never in the plan. Those in `dropped`
  // are already deleted from the computation (DropTakenBack); the pointers
  // only name them.
  absl::flat_hash_set<const HloInstruction*> removed;
  absl::flat_hash_set<const HloInstruction*> dropped;
  std::vector<int> active;
  std::vector<AppliedMove> moves;
  std::vector<ScoreCache> scores;  // by value
  ScoreReaders score_readers;
  AppliedMove* current = nullptr;  // the move being applied
  PlannerResult result;
  int current_p = 0;
};

// Builds the liveness model and the value table from the computation's
// schedule.
absl::Status InitPlannerState(PlannerState& state);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PLANNER_VALUES_H_
