// The pass's flags, each declared once: its name, the word for its value, its
// default, its help, the values it accepts and how it sets RematOptions.
// The parser, hlo-remat's --help and --list-flags, and the in-tree XLA_FLAGS
// registration all read this table; remat-harness reads --list-flags.
#ifndef XLA_SERVICE_REMAT_REMAT_FLAG_TABLE_H_
#define XLA_SERVICE_REMAT_REMAT_FLAG_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/service/remat/remat_options.h"

namespace xla {
namespace remat {

// Every flag, for code that names one (an error message, a hint).
enum class RematFlagId {
  kEnable,
  kMemLimit,
  kScheduler,
  kAlgorithm,
  kSmallNodeLimit,
  kMaxExtraFlops,
  kOptimalSeconds,
  kDisableCuda,
  kDumpDot,
  kDumpMemlog,
  kFrontierCache,
};

struct RematFlag {
  // Parses `value` into `options`; the error names the flag `name`, the value
  // and what was expected.
  using Setter = absl::Status (*)(absl::string_view name,
                                  absl::string_view value,
                                  RematOptions& options);

  RematFlagId id;
  // What remat-harness calls the flag ("mem_limit"): the name's last words.
  std::string key;
  std::string name;
  // The word for the value in --help ("BYTES"); "" for a switch, which takes
  // no value or true/false.
  std::string value_word;
  std::string default_text;
  std::string help;
  // The values a choice flag accepts; empty for any other flag.
  std::vector<std::string> choices;
  Setter set;

  bool is_switch() const { return value_word.empty(); }
};

// All flags, in --help order.
const std::vector<RematFlag>& RematFlagTable();

// `id`'s name, without dashes: "xla_rematerialization_algorithm".
absl::string_view RematFlagName(RematFlagId id);

// The flag called `name` (without dashes), or nullptr.
const RematFlag* FindRematFlag(absl::string_view name);

// Names of all flags, in the table's order.
std::vector<std::string> RematFlagNames();

// Parses "1073741824", "512M", "1.5GiB", "64KiB"... into bytes. K/M/G and
// KiB/MiB/GiB are all powers of 1024, as XLA users expect of memory sizes.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

// The bytes a value of the budget flag names, for a module whose memory
// before the pass is `memory_before`: what the pass would plan for. The
// error is the flag's own (remat-harness asks through hlo-remat
// --resolve-budgets, so both tools read a budget alike).
absl::StatusOr<int64_t> ResolveBudget(absl::string_view value,
                                      int64_t memory_before);

// Applies one flag ("--xla_rematerialization_algorithm=path") to `options`.
// Returns NotFound for a flag that is not one of ours (so callers can pass it
// on), InvalidArgument naming the flag, the value and the choices otherwise.
absl::Status ApplyRematFlag(absl::string_view flag, RematOptions& options);

// Splits an XLA_FLAGS-style string on whitespace and applies our flags,
// ignoring everyone else's.
absl::Status ApplyRematFlagsFromString(absl::string_view xla_flags,
                                       RematOptions& options);

// The table as JSON, for remat-harness (hlo-remat --list-flags): a list of
// {"key", "name", "value", "default", "help", "choices"}.
std::string RematFlagTableJson();

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_FLAG_TABLE_H_
