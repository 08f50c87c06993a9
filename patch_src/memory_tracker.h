// Live-bytes accounting along a schedule.
//
// A buffer is an array (or tuple table) that an instruction defines; tuple,
// get-tuple-element, bitcast, while and the like only forward buffers. A
// buffer is live from its definition to its last use; entry parameters and
// module outputs stay live to the end, but for a donated parameter whose
// output is counted apart (AliasedOutputs::kOwnBytes), which ends at its last
// use. A call site (while, conditional, call) also holds the peak of the
// computations it runs. This is the model HeapSimulator uses on the same
// schedule (XLA's live ranges), without its in-place reuse of an operand's
// buffer by its user, so the tracker may be a little higher.
#ifndef XLA_SERVICE_REMAT_MEMORY_TRACKER_H_
#define XLA_SERVICE_REMAT_MEMORY_TRACKER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/size_function.h"
#include "xla/shape_util.h"

namespace xla {
namespace remat {

// How an output of the entry aliased with a donated parameter is counted.
// BufferAssigner (the GPU's figure) gives it the parameter's allocation, which
// lives through the step. XLA's live ranges, which HeapSimulator (the CPU's
// figure) counts by, end the parameter at its last use and give the output a
// buffer from its definition; counted so, the tracker is the figure on the CPU
// steps of the catalogue (docs/measured.md, "where a cold frontier goes").
enum class AliasedOutputs {
  // From its definition to the end, like any other output; the donated
  // parameter ends at its last use.
  kOwnBytes,
  kInParameter,  // adds nothing: the parameter's buffer holds it to the end
};

struct TrackedBuffer {
  const HloInstruction* defining = nullptr;
  ShapeIndex index;
  int64_t size = 0;
  int def_pos = 0;
  int last_use_pos = -1;  // -1: never used
  bool live_to_end = false;
};

class ComputationMemory {
 public:
  // `called_peaks` holds the internal peak of every computation called from
  // `computation` through while/conditional/call.
  static absl::StatusOr<ComputationMemory> Build(
      const HloComputation* computation,
      const std::vector<HloInstruction*>& sequence, bool is_entry,
      const SizeFunction& size_fn,
      const absl::flat_hash_map<const HloComputation*, int64_t>& called_peaks,
      AliasedOutputs aliased_outputs = AliasedOutputs::kOwnBytes);

  const std::vector<TrackedBuffer>& buffers() const { return buffers_; }
  const std::vector<HloInstruction*>& sequence() const { return sequence_; }
  // Bytes live at each position of the sequence.
  const std::vector<int64_t>& profile() const { return profile_; }
  // Bytes held by called computations at each position.
  const std::vector<int64_t>& called_bytes() const { return called_bytes_; }
  int64_t peak() const { return peak_; }
  int peak_position() const { return peak_position_; }
  int end_position() const { return static_cast<int>(sequence_.size()) - 1; }
  int Position(const HloInstruction* instruction) const {
    auto it = position_.find(instruction);
    return it == position_.end() ? -1 : it->second;
  }
  // Buffers an (instruction, index) may hold.
  const std::vector<int>& Sources(const HloInstruction* instruction,
                                  const ShapeIndex& index) const;
  // Buffers of every subshape of `instruction`, without repeats.
  std::vector<int> AllSources(const HloInstruction* instruction) const;
  int LastPosition(const TrackedBuffer& buffer) const {
    if (buffer.live_to_end) return end_position();
    return buffer.last_use_pos < buffer.def_pos ? buffer.def_pos
                                                : buffer.last_use_pos;
  }

 private:
  // The three steps of Build: a buffer for each (instruction, index) that
  // defines one, each buffer's last use, and the bytes live at each position.
  void DefineBuffers(bool is_entry, const SizeFunction& size_fn);
  void RecordUses(const HloInstruction* root);
  void CountAliasedOutputsInParameters(const HloComputation* entry);
  void EndDonatedParametersAtLastUse(const HloComputation* entry);
  void BuildProfile(
      const absl::flat_hash_map<const HloComputation*, int64_t>& called_peaks);
  int NewBuffer(const HloInstruction* defining, const ShapeIndex& index,
                int64_t size, int def_pos);

  std::vector<HloInstruction*> sequence_;
  absl::flat_hash_map<const HloInstruction*, int> position_;
  std::vector<TrackedBuffer> buffers_;
  absl::flat_hash_map<const HloInstruction*, std::vector<std::vector<int>>>
      sources_;  // per instruction, per subshape in ForEachSubshape order
  std::vector<int64_t> profile_;
  std::vector<int64_t> called_bytes_;
  int64_t peak_ = 0;
  int peak_position_ = 0;
};

struct ModuleMemory {
  int64_t peak_bytes = 0;
  const HloInstruction* peak_instruction = nullptr;
  absl::flat_hash_map<const HloComputation*, int64_t> computation_peaks;
  // The entry's model on the module's schedule: built once, read by the
  // report, the dumps and the planner while that schedule holds.
  std::shared_ptr<const ComputationMemory> entry;
};

// Peak of the scheduled module: the entry computation's profile with the
// called computations' peaks added at their call sites.
absl::StatusOr<ModuleMemory> TrackModuleMemory(const HloModule& module,
                                               const SizeFunction& size_fn,
                                               AliasedOutputs aliased_outputs);

// Internal peaks of every sequential computation, callees first.
absl::StatusOr<absl::flat_hash_map<const HloComputation*, int64_t>>
CalledComputationPeaks(const HloModule& module, const SizeFunction& size_fn);

// The computations whose memory counts at `instruction` (while, conditional,
// call); fusion and reducer bodies run in place and hold nothing.
std::vector<const HloComputation*> SequentialCallees(
    const HloInstruction* instruction);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_MEMORY_TRACKER_H_
