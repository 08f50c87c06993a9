#include "xla/service/remat/frontier_cache.h"

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
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
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/planner_types.h"
#include "xla/service/remat/remat_options.h"
#include "xla/tsl/platform/env.h"
#include "xla/tsl/platform/errors.h"

namespace xla {
namespace remat {

namespace {

// The first line of every frontier file; a change of the format changes it.
constexpr absl::string_view kMagic = "hlo-remat frontier 4";

absl::Status BadLine(absl::string_view where, int line_number,
                     absl::string_view why) {
  return absl::DataLossError(absl::StrCat(
      where, ":", line_number, ": not a frontier file line (", why, ")"));
}

constexpr absl::string_view kStepWords[] = {"plan", "take_back_unneeded",
                                            "take_back_out_of_line"};

absl::string_view StepWord(PlanStepKind kind) {
  return kStepWords[static_cast<int>(kind)];
}

std::optional<PlanStepKind> StepNamed(absl::string_view word) {
  const auto* found = absl::c_find(kStepWords, word);
  if (found == std::end(kStepWords)) return std::nullopt;
  return static_cast<PlanStepKind>(found - std::begin(kStepWords));
}

bool ParseBit(absl::string_view word, bool& bit) {
  if (word != "0" && word != "1") return false;
  bit = word == "1";
  return true;
}

void AppendRecipe(const PlanRecipe& recipe, std::string& text) {
  // Numbers with every digit, so that they read back exactly.
  absl::StrAppend(&text, "recipe ", recipe.chains ? 1 : 0, " ",
                  JsonNumber(recipe.cap), " ", recipe.tracker_peak, " ",
                  JsonNumber(recipe.extra_flops), "\n");
  for (const PlanStep& step : recipe.steps) {
    absl::StrAppend(&text, "step ", StepWord(step.kind), " ", step.target, " ",
                    step.chains ? 1 : 0, " ", JsonNumber(step.cap), " ",
                    step.recompute_only ? 1 : 0, "\n");
  }
}

// The words after a line's first, into what it names; false when they
// are not what that line holds.
bool ParseRecipeLine(absl::string_view line, PlanRecipe& recipe) {
  const std::vector<absl::string_view> f =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  return f.size() == 4 && ParseBit(f[0], recipe.chains) &&
         absl::SimpleAtod(f[1], &recipe.cap) &&
         absl::SimpleAtoi(f[2], &recipe.tracker_peak) &&
         absl::SimpleAtod(f[3], &recipe.extra_flops);
}

bool ParseStepLine(absl::string_view line, PlanStep& step) {
  const std::vector<absl::string_view> f =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (f.size() != 5) return false;
  const std::optional<PlanStepKind> kind = StepNamed(f[0]);
  if (!kind.has_value()) return false;
  step.kind = *kind;
  return absl::SimpleAtoi(f[1], &step.target) && ParseBit(f[2], step.chains) &&
         absl::SimpleAtod(f[3], &step.cap) &&
         ParseBit(f[4], step.recompute_only);
}

bool ParsePointLine(absl::string_view line, FrontierPoint& point) {
  const std::vector<absl::string_view> f =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  return f.size() == 6 && absl::SimpleAtoi(f[0], &point.aim_bytes) &&
         absl::SimpleAtoi(f[1], &point.peak_bytes) &&
         absl::SimpleAtod(f[2], &point.extra_flops) &&
         ParseBit(f[3], point.kept) &&
         absl::SimpleAtod(f[4], &point.cap_flops) &&
         ParseBit(f[5], point.chains);
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
  for (size_t i = 0; i < frontier.points.size(); ++i) {
    const FrontierPoint& point = frontier.points[i];
    absl::StrAppend(&text, "point ", point.aim_bytes, " ", point.peak_bytes,
                    " ", JsonNumber(point.extra_flops), " ", point.kept ? 1 : 0,
                    " ", JsonNumber(point.cap_flops), " ", point.chains ? 1 : 0,
                    "\n");
    if (i < frontier.recipes.size() && frontier.recipes[i].has_value()) {
      AppendRecipe(*frontier.recipes[i], text);
    }
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
    } else if (absl::ConsumePrefix(&line, "capped ")) {
      if (!ParseBit(line, frontier.capped)) {
        return BadLine(where, line_number, "capped is 0 or 1");
      }
    } else if (absl::ConsumePrefix(&line, "point ")) {
      FrontierPoint point;
      if (!ParsePointLine(line, point)) {
        return BadLine(where, line_number,
                       "point AIM PEAK FLOPS KEPT CAP CHAINS, KEPT and "
                       "CHAINS 0 or 1");
      }
      frontier.points.push_back(point);
      frontier.recipes.emplace_back();
    } else if (absl::ConsumePrefix(&line, "recipe ")) {
      PlanRecipe recipe;
      if (frontier.points.empty() || frontier.recipes.back().has_value() ||
          !ParseRecipeLine(line, recipe)) {
        return BadLine(where, line_number,
                       "recipe CHAINS CAP PEAK FLOPS, once after its point");
      }
      frontier.recipes.back() = std::move(recipe);
    } else if (absl::ConsumePrefix(&line, "step ")) {
      PlanStep step;
      if (frontier.recipes.empty() || !frontier.recipes.back().has_value() ||
          !ParseStepLine(line, step)) {
        return BadLine(where, line_number,
                       "step KIND TARGET CHAINS CAP RECOMPUTE_ONLY, after a "
                       "recipe");
      }
      frontier.recipes.back()->steps.push_back(step);
    } else if (line == "end") {
      ended = true;
    } else {
      return BadLine(where, line_number, "unknown line");
    }
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
