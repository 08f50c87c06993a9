// The rematerialization flags in XLA's own flag list (in-tree build).
//
// XLA parses XLA_FLAGS once and dies on a flag it does not know, so ours are
// registered beside the DebugOptions flags. Their values go through the
// engine's parser into one process-wide RematOptions; a bad value makes the
// setter fail with the engine's message (naming the flag, the value and the
// choices), which XLA reports as a flag-parsing error.
#ifndef XLA_SERVICE_REMAT_REMAT_FLAGS_H_
#define XLA_SERVICE_REMAT_REMAT_FLAGS_H_

#include <vector>

#include "xla/service/remat/remat_options.h"
#include "xla/tsl/util/command_line_flags.h"

namespace xla {
namespace remat {

// Adds our flags to `flag_list` (called from MakeDebugOptionsFlags).
void AppendRematFlags(std::vector<tsl::Flag>* flag_list);

// The options the flags set; `enabled` is false unless
// --xla_use_hlo_rematerialization was given.
RematOptions CurrentRematOptions();

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_FLAGS_H_
