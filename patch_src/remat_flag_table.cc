#include "xla/service/remat/remat_flag_table.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/base/no_destructor.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "xla/service/remat/json_text.h"
#include "xla/service/remat/remat_options.h"

namespace xla {
namespace remat {
namespace {

absl::Status BadValue(absl::string_view flag, absl::string_view value,
                      absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, "=", value, ": invalid value; expected ", expected));
}

std::string ChoiceList(const std::vector<absl::string_view>& names) {
  return absl::StrCat("one of ", absl::StrJoin(names, " "));
}

// A bare whole number up to this reads as a percentage more than as bytes.
constexpr int64_t kAmbiguousBytes = 100;

// The budget's forms, for the error that refuses one.
constexpr char kMemLimitForms[] =
    "a share of the module's memory such as 0.5x, 0.5 or 50%, or bytes such "
    "as 1073741824, 512M or 1.5GiB";

// Not a bare whole number: "0.5", "1e-05", "-1" (a byte count is digits).
bool IsFractional(absl::string_view s) {
  return !absl::c_all_of(s, absl::ascii_isdigit);
}

// A share of the module's memory ("0.5x", "50%", or "0.5": a number that is
// not a whole one and no larger than 1, which as bytes would mean nothing),
// or nullopt when `text` is a byte count for ParseByteSize.
absl::StatusOr<std::optional<double>> ParseMemoryShare(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  const bool percent = absl::ConsumeSuffix(&s, "%");
  const bool marked =
      percent || absl::ConsumeSuffix(&s, "x") || absl::ConsumeSuffix(&s, "X");
  const double scale = percent ? 0.01 : 1;
  double value = 0;
  const bool number = absl::SimpleAtod(s, &value) && std::isfinite(value);
  if (!marked && !(IsFractional(s) && number && value <= 1)) {
    return std::optional<double>();
  }
  if (!number) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a number"));
  }
  value *= scale;
  if (value <= 0 || value > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a share must be in (0, 1]; '", text, "' is ", value));
  }
  return std::optional<double>(value);
}

// Sets `field` to `value`, a finite number that `in_range` accepts;
// otherwise an error naming the flag, the value and `expected`.
absl::Status SetNumber(absl::string_view name, absl::string_view value,
                       absl::FunctionRef<bool(double)> in_range,
                       absl::string_view expected, double& field) {
  double number = 0;
  if (!absl::SimpleAtod(value, &number) || !std::isfinite(number) ||
      !in_range(number)) {
    return BadValue(name, value, expected);
  }
  field = number;
  return absl::OkStatus();
}

// The setters, one per kind of value.

template <bool RematOptions::* kSwitch>
absl::Status SetSwitch(absl::string_view name, absl::string_view value,
                       RematOptions& options) {
  const std::string lower = absl::AsciiStrToLower(value);
  if (lower.empty() || lower == "true" || lower == "1") {
    options.*kSwitch = true;
  } else if (lower == "false" || lower == "0") {
    options.*kSwitch = false;
  } else {
    return BadValue(name, value, "true or false (or no value)");
  }
  return absl::OkStatus();
}

absl::Status SetMemLimit(absl::string_view name, absl::string_view value,
                         RematOptions& options) {
  absl::StatusOr<std::optional<double>> share = ParseMemoryShare(value);
  if (!share.ok()) {
    return BadValue(
        name, value,
        absl::StrCat(kMemLimitForms, " (", share.status().message(), ")"));
  }
  if (share->has_value()) {
    options.memory_limit_fraction = **share;
    options.memory_limit_bytes = 0;
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> bytes = ParseByteSize(value);
  if (!bytes.ok()) {
    return BadValue(
        name, value,
        absl::StrCat(kMemLimitForms, " (", bytes.status().message(), ")"));
  }
  const absl::string_view bare = absl::StripAsciiWhitespace(value);
  if (*bytes > 1 && *bytes <= kAmbiguousBytes &&
      absl::c_all_of(bare, absl::ascii_isdigit)) {
    return BadValue(name, value,
                    absl::StrCat(kMemLimitForms, " (", *bytes,
                                 " bytes is not a budget; "
                                 "for a share of the module's memory write ",
                                 static_cast<double>(*bytes) / 100, "x or ",
                                 *bytes, "%, for bytes ", *bytes, "B)"));
  }
  options.memory_limit_bytes = *bytes;
  options.memory_limit_fraction = 0;
  return absl::OkStatus();
}

// A choice flag: `kNamed` reads the value, `kNames` lists the choices for
// the error, and the choice goes to `kField`.
template <typename Choice, std::optional<Choice> (*kNamed)(absl::string_view),
          std::vector<absl::string_view> (*kNames)(),
          Choice RematOptions::* kField>
absl::Status SetChoice(absl::string_view name, absl::string_view value,
                       RematOptions& options) {
  std::optional<Choice> choice = kNamed(value);
  if (!choice.has_value()) return BadValue(name, value, ChoiceList(kNames()));
  options.*kField = *choice;
  return absl::OkStatus();
}
constexpr RematFlag::Setter SetScheduler =
    SetChoice<RematScheduler, SchedulerNamed, SchedulerNames,
              &RematOptions::scheduler>;
constexpr RematFlag::Setter SetAlgorithm =
    SetChoice<RematAlgorithm, AlgorithmNamed, AlgorithmNames,
              &RematOptions::algorithm>;

template <std::string RematOptions::* kField>
absl::Status SetFolder(absl::string_view name, absl::string_view value,
                       RematOptions& options) {
  if (value.empty()) return BadValue(name, value, "a folder");
  options.*kField = std::string(value);
  return absl::OkStatus();
}

bool AtLeastZero(double number) { return number >= 0; }

absl::Status SetSmallNodeLimit(absl::string_view name, absl::string_view value,
                               RematOptions& options) {
  return SetNumber(name, value, AtLeastZero,
                   "a number of MiB >= 0 (0 disables)",
                   options.small_node_limit_mib);
}

absl::Status SetMaxExtraFlops(absl::string_view name, absl::string_view value,
                              RematOptions& options) {
  if (absl::EqualsIgnoreCase(value, "none")) {
    options.max_extra_flops_fraction = -1;
    return absl::OkStatus();
  }
  return SetNumber(name, value, AtLeastZero,
                   "a fraction of the module's FLOPs >= 0 such as 0.25, or "
                   "none (no cap)",
                   options.max_extra_flops_fraction);
}

absl::Status SetOptimalSeconds(absl::string_view name, absl::string_view value,
                               RematOptions& options) {
  return SetNumber(
      name, value, [](double number) { return number > 0; },
      "a number of seconds > 0 such as 60", options.optimal_seconds);
}

std::vector<std::string> Strings(const std::vector<absl::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

std::vector<RematFlag> MakeTable() {
  using Id = RematFlagId;
  return {
      {Id::kEnable,
       "enable",
       "xla_use_hlo_rematerialization",
       "",
       "off",
       "turn the pass on (implied by hlo-remat)",
       {},
       SetSwitch<&RematOptions::enabled>},
      {Id::kMemLimit,
       "mem_limit",
       "xla_rematerialization_mem_limit",
       "BYTES",
       "0",
       "memory budget: bytes, or 512M, 1.5GiB (powers of 1024), or a share "
       "of the module's memory before the pass: 0.5x, 0.5 or 50%; 0: as low "
       "as the algorithm can (it aims at the floor: entry parameters and the "
       "widest instruction); a bare 2 to 100 is refused, as it reads like a "
       "percentage (write 50% or 50B)",
       {},
       SetMemLimit},
      {Id::kScheduler, "scheduler", "xla_rematerialization_scheduler", "S",
       "default",
       absl::StrCat("schedule before the pass, ", ChoiceList(SchedulerNames()),
                    "; default tries list, DFS and postorder and keeps the "
                    "lowest peak (on CPU, where its lowest plan stays above "
                    "1.25x the floor, the others' plans join the frontier); "
                    "given keeps the incoming one"),
       Strings(SchedulerNames()), SetScheduler},
      {Id::kAlgorithm, "algorithm", "xla_rematerialization_algorithm", "A",
       "standard",
       absl::StrCat(ChoiceList(AlgorithmNames()),
                    "; xla is XLA's own pass, the baseline"),
       Strings(AlgorithmNames()), SetAlgorithm},
      {Id::kSmallNodeLimit,
       "small_node_limit",
       "xla_rematerialization_small_node_limit",
       "MIB",
       "0",
       "values of this many MiB or less are never recomputed; 0 disables",
       {},
       SetSmallNodeLimit},
      {Id::kMaxExtraFlops,
       "max_extra_flops",
       "xla_rematerialization_max_extra_flops",
       "F",
       absl::StrCat(kDefaultMaxExtraFlops),
       "extra FLOPs a plan may spend, as a fraction of the module's; none: "
       "no cap",
       {},
       SetMaxExtraFlops},
      {Id::kOptimalSeconds,
       "optimal_seconds",
       "xla_rematerialization_optimal_seconds",
       "S",
       absl::StrCat(kDefaultOptimalSeconds),
       "seconds the optimal algorithm gives its MILP solver; past them it "
       "keeps path's plan",
       {},
       SetOptimalSeconds},
      {Id::kDisableCuda,
       "disable_cuda",
       "xla_rematerialization_disable_cuda",
       "",
       "off",
       "disable GPU fusions whose multi-output nodes block recomputation",
       {},
       SetSwitch<&RematOptions::disable_cuda_fusions>},
      {Id::kDumpDot,
       "dump_dot",
       "xla_rematerialization_dump_dot",
       "",
       "off",
       "write DOT graphs before and after, coloured by memory pressure",
       {},
       SetSwitch<&RematOptions::dump_dot>},
      {Id::kDumpMemlog,
       "dump_memlog",
       "xla_rematerialization_dump_memlog",
       "",
       "off",
       "write a per-instruction memory log with each decision",
       {},
       SetSwitch<&RematOptions::dump_memlog>},
      {Id::kFrontierCache,
       "frontier_cache",
       "xla_rematerialization_frontier_cache",
       "DIR",
       "none",
       "keep each module's memory-compute frontier in DIR: a later compile "
       "of the same module, at any budget, makes only the chosen plan",
       {},
       SetFolder<&RematOptions::frontier_cache_dir>},
  };
}

}  // namespace

const std::vector<RematFlag>& RematFlagTable() {
  static const absl::NoDestructor<std::vector<RematFlag>> table(MakeTable());
  return *table;
}

absl::string_view RematFlagName(RematFlagId id) {
  for (const RematFlag& flag : RematFlagTable()) {
    if (flag.id == id) return flag.name;
  }
  return "unknown";
}

const RematFlag* FindRematFlag(absl::string_view name) {
  for (const RematFlag& flag : RematFlagTable()) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

std::vector<std::string> RematFlagNames() {
  std::vector<std::string> names;
  for (const RematFlag& flag : RematFlagTable()) names.push_back(flag.name);
  return names;
}

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  if (s.empty()) return absl::InvalidArgumentError("empty size");
  size_t digits_end = 0;
  while (digits_end < s.size() &&
         (absl::ascii_isdigit(s[digits_end]) || s[digits_end] == '.')) {
    ++digits_end;
  }
  absl::string_view number = s.substr(0, digits_end);
  std::string suffix = absl::AsciiStrToLower(s.substr(digits_end));
  double value = 0;
  if (number.empty() || !absl::SimpleAtod(number, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a non-negative number of bytes"));
  }
  double scale = 1;
  if (suffix.empty() || suffix == "b") {
    // "0.5" is not half the peak: a fraction of a byte would round to 0,
    // which asks for as little memory as the algorithm can reach.
    if (value != std::floor(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text,
                       "' is not a whole number of bytes; for a share of the "
                       "module's memory write 0.5x or 50%"));
    }
  } else if (suffix == "k" || suffix == "kib" || suffix == "kb") {
    scale = 1024.0;
  } else if (suffix == "m" || suffix == "mib" || suffix == "mb") {
    scale = 1024.0 * 1024;
  } else if (suffix == "g" || suffix == "gib" || suffix == "gb") {
    scale = 1024.0 * 1024 * 1024;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text,
        "' has an unknown suffix; use K, M, G, KiB, MiB or GiB for bytes, x "
        "or % for a share of the module's memory"));
  }
  double bytes = value * scale;
  if (!std::isfinite(bytes) ||
      bytes > static_cast<double>(std::numeric_limits<int64_t>::max() / 2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is too large"));
  }
  return static_cast<int64_t>(std::llround(bytes));
}

absl::StatusOr<int64_t> ResolveBudget(absl::string_view value,
                                      int64_t memory_before) {
  RematOptions options;
  absl::Status status =
      SetMemLimit(RematFlagName(RematFlagId::kMemLimit), value, options);
  if (!status.ok()) return status;
  return ResolvedBudgetBytes(options, memory_before);
}

absl::Status ApplyRematFlag(absl::string_view flag, RematOptions& options) {
  absl::string_view body = flag;
  while (!body.empty() && body.front() == '-') body.remove_prefix(1);
  std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(body, absl::MaxSplits('=', 1));
  const RematFlag* entry = FindRematFlag(kv.first);
  if (entry == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("not a rematerialization flag: ", flag));
  }
  if (!entry->is_switch() && kv.second.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", entry->name, " needs a value (--", entry->name, "=...)"));
  }
  return entry->set(entry->name, kv.second, options);
}

absl::Status ApplyRematFlagsFromString(absl::string_view xla_flags,
                                       RematOptions& options) {
  for (absl::string_view token :
       absl::StrSplit(xla_flags, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    absl::Status s = ApplyRematFlag(token, options);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return absl::OkStatus();
}

std::string RematFlagTableJson() {
  std::vector<std::string> entries;
  for (const RematFlag& flag : RematFlagTable()) {
    std::vector<std::string> choices;
    for (const std::string& choice : flag.choices) {
      choices.push_back(JsonQuote(choice));
    }
    entries.push_back(absl::StrCat(
        "{\"key\": ", JsonQuote(flag.key), ", \"name\": ", JsonQuote(flag.name),
        ", \"value\": ", JsonQuote(flag.value_word), ", \"default\": ",
        JsonQuote(flag.default_text), ", \"help\": ", JsonQuote(flag.help),
        ", \"choices\": [", absl::StrJoin(choices, ", "), "]}"));
  }
  return absl::StrCat("[\n  ", absl::StrJoin(entries, ",\n  "), "\n]\n");
}

}  // namespace remat
}  // namespace xla
