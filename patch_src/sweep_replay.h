// A sweep from no moves, made again by applying the moves it kept, without
// scoring and without the moves it tried and refused.
//
// The searches make the same sweep again: to judge a plan they compared by
// its outcome, to go back to their best plan after trying a take-back, to
// end with the plan they keep. Scoring and the moves tried and refused are
// most of a sweep, and sweeps made again a sizeable share of the search's
// time (docs/measured.md).
//
// Moves name values by their index in the value table, and every move tried
// adds its clones' values at the next indices, refused moves' included, so
// the same move names other indices in a replay. A recorded move's own
// values are named again by the order in which its replay adds them: a move
// applied to the same state adds the same values in the same order.
#ifndef XLA_SERVICE_REMAT_SWEEP_REPLAY_H_
#define XLA_SERVICE_REMAT_SWEEP_REPLAY_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "xla/service/remat/planner_values.h"

namespace xla {
namespace remat {

// A sweep from no moves: its aim, with chains or not, under the compute cap.
struct PlanKey {
  int64_t aim;
  bool chains;
  double cap;
  template <typename H>
  friend H AbslHashValue(H state, const PlanKey& key) {
    return H::combine(std::move(state), key.aim, key.chains, key.cap);
  }
  bool operator==(const PlanKey& other) const {
    return aim == other.aim && chains == other.chains && cap == other.cap;
  }
};

// A move a sweep kept, as it was applied.
struct RecordedMove {
  Candidate candidate;
  int slot = 0;
  std::vector<int> new_values;  // the values it added, in order
};

// What a sweep from no moves kept and came to.
struct SweepRecord {
  PlanKey sweep;
  // The value table's size when the sweep started: a higher index is a
  // value one of the sweep's moves added.
  int first_added_value = 0;
  std::vector<RecordedMove> moves;
  // Where the compute cap left a move out.
  std::vector<int> capped_slots;
  // The tracker's peak and the moves' own FLOPs the sweep left.
  int64_t peak = 0;
  double move_flops = 0;
};

// The indices a recorded sweep's values have in its replay.
class ValueRenaming {
 public:
  explicit ValueRenaming(int first_added_value)
      : first_added_value_(first_added_value) {}

  // Names `candidate`'s values as the replay does. False: it names a value
  // the sweep added that the replay has not added.
  bool Rename(Candidate& candidate) const;
  // A move of the record added `recorded`; its replay added `replayed`.
  // False if they differ in number (the replay is not the same move).
  bool Add(absl::Span<const int> recorded, absl::Span<const int> replayed);

 private:
  bool RenameIndex(int& index) const;

  int first_added_value_;
  absl::flat_hash_map<int, int> renamed_;
};

// Applies `record`'s moves to `state`, which holds no move. Returns whether
// it came to what the sweep came to (the moves' values, the tracker's peak
// and the FLOPs); if not, the caller takes back what was applied. Does not
// score: no score is valid afterwards, and the values a sweep would leave
// active are not (the caller makes the sweep again before another sweep
// continues from this plan).
absl::StatusOr<bool> ReplaySweep(PlannerState& state,
                                 const SweepRecord& record);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_SWEEP_REPLAY_H_
