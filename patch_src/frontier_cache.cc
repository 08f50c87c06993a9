#include "xla/service/remat/frontier_cache.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/json_text.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/remat_options.h"
#include "xla/tsl/platform/env.h"
#include "xla/tsl/platform/errors.h"

namespace xla {
namespace remat {

namespace {

// The first line of every frontier file; a change of the format changes it.
constexpr absl::string_view kMagic = "hlo-remat frontier 1";

absl::Status BadLine(absl::string_view where, int line_number,
                     absl::string_view why) {
  return absl::DataLossError(absl::StrCat(
      where, ":", line_number, ": not a frontier file line (", why, ")"));
}

}  // namespace

std::string FrontierIdentity(const RematOptions& options) {
  return absl::StrCat(
      "algorithm=", AlgorithmName(options.algorithm),
      " scheduler=", SchedulerName(options.scheduler),
      " small_node_limit_mib=", JsonNumber(options.small_node_limit_mib),
      " max_extra_flops=", JsonNumber(options.max_extra_flops_fraction),
      " figure=", MemoryFigureName(options.memory_figure.figure),
      " alignment=", options.memory_figure.alignment,
      " check_live_ranges=", options.check_live_ranges ? 1 : 0, " engine=",
      options.engine_revision.empty() ? "unknown" : options.engine_revision);
}

std::string FrontierFileText(const KnownFrontier& frontier,
                             absl::string_view identity) {
  std::string text = absl::StrCat(kMagic, "\nidentity ", identity, "\ncapped ",
                                  frontier.capped ? 1 : 0, "\n");
  for (const FrontierPoint& point : frontier.points) {
    // FLOPs with every digit, so that they read back exactly.
    absl::StrAppend(&text, "point ", point.aim_bytes, " ", point.peak_bytes,
                    " ", JsonNumber(point.extra_flops), " ", point.kept ? 1 : 0,
                    "\n");
  }
  absl::StrAppend(&text, "end\n");
  return text;
}

absl::StatusOr<std::optional<KnownFrontier>> ParseFrontierFile(
    absl::string_view text, absl::string_view identity,
    absl::string_view where) {
  const std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (lines.empty() || lines[0] != kMagic) {
    return BadLine(where, 1, absl::StrCat("expected \"", kMagic, "\""));
  }
  KnownFrontier frontier;
  bool ended = false;
  for (size_t i = 1; i < lines.size() && !ended; ++i) {
    const int line_number = static_cast<int>(i) + 1;
    absl::string_view line = lines[i];
    if (absl::ConsumePrefix(&line, "identity ")) {
      // Made under other options or by another engine: not this frontier.
      if (line != identity) return std::nullopt;
      continue;
    }
    if (absl::ConsumePrefix(&line, "capped ")) {
      if (line != "0" && line != "1") {
        return BadLine(where, line_number, "capped is 0 or 1");
      }
      frontier.capped = line == "1";
      continue;
    }
    if (absl::ConsumePrefix(&line, "point ")) {
      const std::vector<absl::string_view> fields =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      FrontierPoint point;
      if (fields.size() != 4 ||
          !absl::SimpleAtoi(fields[0], &point.aim_bytes) ||
          !absl::SimpleAtoi(fields[1], &point.peak_bytes) ||
          !absl::SimpleAtod(fields[2], &point.extra_flops) ||
          (fields[3] != "0" && fields[3] != "1")) {
        return BadLine(where, line_number,
                       "point AIM PEAK FLOPS KEPT, KEPT 0 or 1");
      }
      point.kept = fields[3] == "1";
      frontier.points.push_back(point);
      continue;
    }
    if (line == "end") {
      ended = true;
      continue;
    }
    return BadLine(where, line_number, "unknown line");
  }
  // Cut short (a full disk): the points read may not be all of them.
  if (!ended) {
    return BadLine(where, static_cast<int>(lines.size()), "no end line");
  }
  return frontier;
}

FrontierCache::FrontierCache(absl::string_view dir, const HloModule& module,
                             const RematOptions& options)
    : dir_(dir),
      path_(absl::StrCat(dir, "/", module.GetFingerprint128(), ".",
                         AlgorithmName(options.algorithm), ".frontier")),
      identity_(FrontierIdentity(options)) {}

absl::StatusOr<std::optional<KnownFrontier>> FrontierCache::Load() const {
  tsl::Env* env = tsl::Env::Default();
  if (!env->FileExists(path_).ok()) return std::nullopt;
  std::string text;
  TF_RETURN_IF_ERROR(tsl::ReadFileToString(env, path_, &text));
  return ParseFrontierFile(text, identity_, path_);
}

absl::Status FrontierCache::Store(const KnownFrontier& frontier) const {
  tsl::Env* env = tsl::Env::Default();
  TF_RETURN_IF_ERROR(env->RecursivelyCreateDir(dir_));
  std::string temporary = absl::StrCat(path_, ".");
  if (!env->CreateUniqueFileName(&temporary, ".tmp")) {
    return absl::InternalError(
        absl::StrCat("cannot name a temporary file beside ", path_));
  }
  TF_RETURN_IF_ERROR(tsl::WriteStringToFile(
      env, temporary, FrontierFileText(frontier, identity_)));
  absl::Status renamed = env->RenameFile(temporary, path_);
  if (!renamed.ok()) {
    // The rename's error is the one to report; the temporary is litter.
    env->DeleteFile(temporary).IgnoreError();
    return absl::InternalError(
        absl::StrCat(path_, ": cannot write: ", renamed.message()));
  }
  return absl::OkStatus();
}

}  // namespace remat
}  // namespace xla
