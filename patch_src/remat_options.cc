#include "xla/service/remat/remat_options.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace xla {
namespace remat {
namespace {

constexpr absl::string_view kEnable = "xla_use_hlo_rematerialization";
constexpr absl::string_view kMemLimit = "xla_rematerialization_mem_limit";
constexpr absl::string_view kScheduler = "xla_rematerialization_scheduler";
constexpr absl::string_view kAlgorithm = "xla_rematerialization_algorithm";
constexpr absl::string_view kSmallNode =
    "xla_rematerialization_small_node_limit";
constexpr absl::string_view kDisableCuda = "xla_rematerialization_disable_cuda";
constexpr absl::string_view kDumpDot = "xla_rematerialization_dump_dot";
constexpr absl::string_view kDumpMemlog = "xla_rematerialization_dump_memlog";
constexpr absl::string_view kMaxExtraFlops =
    "xla_rematerialization_max_extra_flops";
constexpr absl::string_view kOptimalSeconds =
    "xla_rematerialization_optimal_seconds";

constexpr std::pair<absl::string_view, RematAlgorithm> kAlgorithms[] = {
    {"standard", RematAlgorithm::kStandard},
    {"compress", RematAlgorithm::kCompress},
    {"standardcompress", RematAlgorithm::kStandardCompress},
    {"path", RematAlgorithm::kPath},
    {"optimal", RematAlgorithm::kOptimal},
    {"xla", RematAlgorithm::kXla},
};
constexpr std::pair<absl::string_view, RematScheduler> kSchedulers[] = {
    {"default", RematScheduler::kDefault},
    {"given", RematScheduler::kGiven},
    {"postorder", RematScheduler::kPostorder},
    {"DFS", RematScheduler::kDfs},
    {"list", RematScheduler::kList},
};

absl::Status BadValue(absl::string_view flag, absl::string_view value,
                      absl::string_view choices) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, "=", value, ": invalid value; expected ", choices));
}

template <typename Table>
std::string ChoiceList(const Table& table) {
  std::string out = "one of";
  for (const auto& [name, unused] : table) absl::StrAppend(&out, " ", name);
  return out;
}

absl::StatusOr<bool> ParseBool(absl::string_view flag,
                               absl::string_view value) {
  std::string lower = absl::AsciiStrToLower(value);
  if (lower.empty() || lower == "true" || lower == "1") return true;
  if (lower == "false" || lower == "0") return false;
  return BadValue(flag, value, "true or false (or no value)");
}

}  // namespace

absl::string_view AlgorithmName(RematAlgorithm algorithm) {
  for (const auto& [name, value] : kAlgorithms) {
    if (value == algorithm) return name;
  }
  return "unknown";
}

absl::string_view SchedulerName(RematScheduler scheduler) {
  for (const auto& [name, value] : kSchedulers) {
    if (value == scheduler) return name;
  }
  return "unknown";
}

namespace {

// The budget's forms, for the error that refuses one.
constexpr char kMemLimitForms[] =
    "a share of the module's memory such as 0.5x, 0.5 or 50%, or bytes such "
    "as 1073741824, 512M or 1.5GiB";

bool IsDecimal(absl::string_view s) {
  return absl::StrContains(s, '.') && absl::c_all_of(s, [](char c) {
           return absl::ascii_isdigit(c) || c == '.';
         });
}

// A share of the module's memory ("0.5x", "50%", or "0.5": a number with a
// point no larger than 1, which as bytes would mean nothing), or nullopt
// when `text` is a byte count for ParseByteSize.
absl::StatusOr<std::optional<double>> ParseMemoryShare(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  const bool percent = absl::ConsumeSuffix(&s, "%");
  const bool marked =
      percent || absl::ConsumeSuffix(&s, "x") || absl::ConsumeSuffix(&s, "X");
  const double scale = percent ? 0.01 : 1;
  double value = 0;
  const bool number = absl::SimpleAtod(s, &value) && std::isfinite(value);
  if (!marked && !(IsDecimal(s) && number && value <= 1)) {
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

}  // namespace

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
    scale = 1;
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

absl::StatusOr<RematAlgorithm> ParseAlgorithm(absl::string_view text) {
  for (const auto& [name, value] : kAlgorithms) {
    if (text == name) return value;
  }
  return BadValue(kAlgorithm, text, ChoiceList(kAlgorithms));
}

absl::StatusOr<RematScheduler> ParseScheduler(absl::string_view text) {
  for (const auto& [name, value] : kSchedulers) {
    // "DFS" is the documented spelling; accept any case for convenience.
    if (absl::AsciiStrToLower(text) == absl::AsciiStrToLower(name)) {
      return value;
    }
  }
  return BadValue(kScheduler, text, ChoiceList(kSchedulers));
}

namespace {

// `value` as a finite number that `in_range` accepts; otherwise an error
// naming the flag, the value and `expected`.
absl::StatusOr<double> ParseNumber(absl::string_view name,
                                   absl::string_view value,
                                   absl::FunctionRef<bool(double)> in_range,
                                   absl::string_view expected) {
  double number = 0;
  if (!absl::SimpleAtod(value, &number) || !std::isfinite(number) ||
      !in_range(number)) {
    return BadValue(name, value, expected);
  }
  return number;
}

}  // namespace

absl::Status ApplyRematFlag(absl::string_view flag, RematOptions& options) {
  absl::string_view body = flag;
  while (!body.empty() && body.front() == '-') body.remove_prefix(1);
  std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(body, absl::MaxSplits('=', 1));
  absl::string_view name = kv.first;
  absl::string_view value = kv.second;
  bool has_value = body.find('=') != absl::string_view::npos;

  auto require_value = [&]() -> absl::Status {
    if (!has_value || value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value (--", name, "=...)"));
    }
    return absl::OkStatus();
  };

  if (IsSwitchFlag(name)) {
    absl::StatusOr<bool> on = ParseBool(name, value);
    if (!on.ok()) return on.status();
    if (name == kEnable) options.enabled = *on;
    if (name == kDisableCuda) options.disable_cuda_fusions = *on;
    if (name == kDumpDot) options.dump_dot = *on;
    if (name == kDumpMemlog) options.dump_memlog = *on;
    return absl::OkStatus();
  }
  if (name == kMemLimit) {
    if (absl::Status s = require_value(); !s.ok()) return s;
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
    options.memory_limit_bytes = *bytes;
    options.memory_limit_fraction = 0;
    return absl::OkStatus();
  }
  if (name == kScheduler) {
    if (absl::Status s = require_value(); !s.ok()) return s;
    absl::StatusOr<RematScheduler> s = ParseScheduler(value);
    if (!s.ok()) return s.status();
    options.scheduler = *s;
    return absl::OkStatus();
  }
  if (name == kAlgorithm) {
    if (absl::Status s = require_value(); !s.ok()) return s;
    absl::StatusOr<RematAlgorithm> a = ParseAlgorithm(value);
    if (!a.ok()) return a.status();
    options.algorithm = *a;
    return absl::OkStatus();
  }
  auto at_least_zero = [](double number) { return number >= 0; };
  if (name == kSmallNode) {
    if (absl::Status s = require_value(); !s.ok()) return s;
    absl::StatusOr<double> mib = ParseNumber(
        name, value, at_least_zero, "a number of MiB >= 0 (0 disables)");
    if (!mib.ok()) return mib.status();
    options.small_node_limit_mib = *mib;
    return absl::OkStatus();
  }
  if (name == kMaxExtraFlops) {
    if (absl::Status s = require_value(); !s.ok()) return s;
    if (absl::AsciiStrToLower(value) == "none") {
      options.max_extra_flops_fraction = -1;
      return absl::OkStatus();
    }
    absl::StatusOr<double> fraction =
        ParseNumber(name, value, at_least_zero,
                    "a fraction of the module's FLOPs >= 0 such as 0.25, "
                    "or none (no cap)");
    if (!fraction.ok()) return fraction.status();
    options.max_extra_flops_fraction = *fraction;
    return absl::OkStatus();
  }
  if (name == kOptimalSeconds) {
    if (absl::Status s = require_value(); !s.ok()) return s;
    absl::StatusOr<double> seconds = ParseNumber(
        name, value, [](double number) { return number > 0; },
        "a number of seconds > 0 such as 60");
    if (!seconds.ok()) return seconds.status();
    options.optimal_seconds = *seconds;
    return absl::OkStatus();
  }
  return absl::NotFoundError(
      absl::StrCat("not a rematerialization flag: ", flag));
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

RematOptions OptionsAfterCopyInsertion(RematOptions options) {
  if (options.scheduler == RematScheduler::kDefault) {
    options.scheduler = RematScheduler::kGiven;
  }
  options.check_live_ranges = true;
  return options;
}

bool IsSwitchFlag(absl::string_view name) {
  return name == kEnable || name == kDisableCuda || name == kDumpDot ||
         name == kDumpMemlog;
}

std::vector<std::string> RematFlagNames() {
  return {std::string(kEnable),        std::string(kMemLimit),
          std::string(kScheduler),     std::string(kAlgorithm),
          std::string(kSmallNode),     std::string(kDisableCuda),
          std::string(kDumpDot),       std::string(kDumpMemlog),
          std::string(kMaxExtraFlops), std::string(kOptimalSeconds)};
}

std::vector<RematFlagDoc> RematFlagDocs() {
  return {
      {std::string(kEnable), "", "off",
       "turn the pass on (implied by hlo-remat)"},
      {std::string(kMemLimit), "BYTES", "0",
       "memory budget: bytes, or 512M, 1.5GiB (powers of 1024), or a share "
       "of the module's memory before the pass: 0.5x, 0.5 or 50%; 0: as low "
       "as the algorithm can "
       "(it aims at the floor: entry parameters and the widest instruction)"},
      {std::string(kScheduler), "S", "default",
       absl::StrCat("schedule before the pass, ", ChoiceList(kSchedulers),
                    "; default tries list, DFS and postorder and keeps the "
                    "lowest peak; given keeps the incoming one")},
      {std::string(kAlgorithm), "A", "standard",
       absl::StrCat(ChoiceList(kAlgorithms),
                    "; xla is XLA's own pass, the baseline")},
      {std::string(kSmallNode), "MIB", "0",
       "values of this many MiB or less are never recomputed; 0 disables"},
      {std::string(kMaxExtraFlops), "F", absl::StrCat(kDefaultMaxExtraFlops),
       "extra FLOPs a plan may spend, as a fraction of the module's; none: "
       "no cap"},
      {std::string(kOptimalSeconds), "S", absl::StrCat(kDefaultOptimalSeconds),
       "seconds the optimal algorithm gives its MILP solver; past them it "
       "keeps path's plan"},
      {std::string(kDisableCuda), "", "off",
       "disable GPU fusions whose multi-output nodes block recomputation"},
      {std::string(kDumpDot), "", "off",
       "write DOT graphs before and after, coloured by memory pressure"},
      {std::string(kDumpMemlog), "", "off",
       "write a per-instruction memory log with each decision"},
  };
}

}  // namespace remat
}  // namespace xla
