#include "xla/service/remat/planner_types.h"

#include <iterator>
#include <utility>

namespace xla {
namespace remat {

void PlannerResult::AddMovesOf(PlannerResult other) {
  recomputed += other.recomputed;
  compressed += other.compressed;
  undone += other.undone;
  out_of_line += other.out_of_line;
  instructions_added += other.instructions_added;
  instructions_removed += other.instructions_removed;
  pinned += other.pinned;
  flops_capped |= other.flops_capped;
  extra_flops += other.extra_flops;
  decisions.insert(decisions.end(),
                   std::make_move_iterator(other.decisions.begin()),
                   std::make_move_iterator(other.decisions.end()));
}

}  // namespace remat
}  // namespace xla
