// What --xla_rematerialization_dump_dot and _dump_memlog write.
//
// Both read the scheduled entry computation through the memory tracker, so
// the colours and figures are the ones the planner worked with.
#ifndef XLA_SERVICE_REMAT_REMAT_DUMP_H_
#define XLA_SERVICE_REMAT_REMAT_DUMP_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/remat_report.h"
#include "xla/service/remat/size_function.h"

namespace xla {
namespace remat {

// <dir>/<module>.<suffix>, the module name made safe for a file name.
std::string DumpPath(absl::string_view dir, absl::string_view module_name,
                     absl::string_view suffix);

// A Graphviz graph of the entry computation: instructions whose value is at
// least kDotMinFractionOfPeak of the peak (and every one the pass added),
// edges labelled and weighted by bytes, fill colour by the memory in use at
// the instruction relative to the peak, recomputed and compressed values
// drawn apart. `memory` is the entry's model on the module's schedule
// (TrackModuleMemory's `entry`).
inline constexpr double kDotMinFractionOfPeak = 0.002;
absl::Status WriteDotGraph(const HloModule& module, const SizeFunction& size_fn,
                           const ComputationMemory& memory,
                           const RematReport& report, const std::string& path);

// One line per instruction in schedule order: memory in use, peak so far,
// the largest live value; each decision of `report` after the line of the
// instruction that prompted it.
absl::Status WriteMemoryLog(const HloModule& module,
                            const ComputationMemory& memory,
                            const RematReport& report, const std::string& path);

// The module as text, scheduled: what the live-range check refused, kept as
// the evidence a report about it needs.
absl::Status WriteModuleText(const HloModule& module, const std::string& path);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_DUMP_H_
