// What one run of the pass did, as figures.
#ifndef XLA_SERVICE_REMAT_REMAT_REPORT_H_
#define XLA_SERVICE_REMAT_REMAT_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xla/service/remat/remat_decision.h"

namespace xla {
namespace remat {

struct RematReport {
  std::string module;
  std::string algorithm;
  std::string scheduler;         // as asked
  std::string scheduler_chosen;  // the one kept ("default" tries three)
  int64_t budget_bytes = 0;
  int64_t peak_before_bytes = 0;  // tracker, on the schedule as given
  int64_t peak_scheduled_bytes = 0;  // tracker, after re-scheduling
  int64_t peak_after_bytes = 0;
  int64_t heap_sim_before_bytes = 0;
  int64_t heap_sim_scheduled_bytes = 0;
  int64_t heap_sim_after_bytes = 0;
  bool budget_met = false;
  int64_t instructions_before = 0;
  int64_t instructions_after = 0;
  int64_t instructions_added = 0;
  int64_t recomputed = 0;
  int64_t compressed = 0;
  int64_t undone = 0;
  int64_t pinned = 0;
  double flops_before = 0;
  double flops_after = 0;
  double pass_seconds = 0;
  std::string numerics = "skipped";  // "equal", "differ" or "skipped"
  std::string note;
  std::vector<RematDecision> decisions;

  std::string ToJson() const;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_REPORT_H_
