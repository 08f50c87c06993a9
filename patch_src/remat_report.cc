#include "xla/service/remat/remat_report.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "xla/service/remat/json_text.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/remat_decision.h"

namespace xla {
namespace remat {
namespace {

// Autotuned kernels change the allocation (docs/measured.md, measured on an
// H100).
constexpr char kDefaultKernelsNote[] =
    "the prediction assumes XLA's default convolution and GEMM kernels; "
    "autotuned ones allocated up to 15% more on an H100. "
    "--gpu-autotune-results F uses those recorded on your GPU";

std::string NameList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", JsonQuote(names[i]));
  }
  return out;
}

std::string CountsJson(const GpuInstructionCounts& counts) {
  return absl::StrCat(
      "{\"instructions\": ", counts.instructions,
      ", \"fusions\": ", counts.fusions,
      ", \"multi_output_fusions\": ", counts.multi_output_fusions,
      ", \"tuple_custom_calls\": ", counts.tuple_custom_calls, "}");
}

std::string WheelReferenceJson(const WheelReferenceFigures& reference) {
  return absl::StrCat(
      "{\"heap_sim_bytes\": ", reference.heap_sim_bytes,
      ", \"buffer_assignment_bytes\": ", reference.buffer_assignment_bytes,
      ", \"counts\": ", CountsJson(reference.counts),
      ", \"text_equal\": ", reference.text_equal ? "true" : "false", "}");
}

// The GPU pipeline's figures (hlo-remat --platform gpu), as `field`s.
void AddGpuPipelineFields(
    const GpuPipelineFigures& g,
    absl::FunctionRef<void(absl::string_view, const std::string&)> field) {
  field("heap_sim_at_hook_before_bytes",
        absl::StrCat(g.heap_sim_at_hook_before_bytes));
  field("heap_sim_at_hook_after_bytes",
        absl::StrCat(g.heap_sim_at_hook_after_bytes));
  field("allocation_at_hook_before_bytes",
        absl::StrCat(g.allocation_at_hook_before_bytes));
  field("allocation_at_hook_after_bytes",
        absl::StrCat(g.allocation_at_hook_after_bytes));
  field("gpu_baseline", CountsJson(g.baseline));
  field("gpu_final", CountsJson(g.final));
  field("scheduler_mem_limit_bytes", absl::StrCat(g.scheduler_mem_limit_bytes));
  field("disabled_passes", absl::StrCat("[", NameList(g.disabled_passes), "]"));
  field("device_memory_bytes", absl::StrCat(g.device_memory_bytes));
  field("compute_capability_major", absl::StrCat(g.compute_capability_major));
  if (g.wheel_reference.has_value()) {
    field("wheel_reference", WheelReferenceJson(*g.wheel_reference));
  }
  field("kernels",
        JsonQuote(g.autotune_results.empty() ? "default" : "autotune results"));
  if (g.autotune_results.empty()) {
    field("kernels_note", JsonQuote(kDefaultKernelsNote));
  } else {
    field("autotune_results", JsonQuote(g.autotune_results));
    field("autotune_hits", absl::StrCat(g.autotune_hits));
    field("autotune_misses", absl::StrCat(g.autotune_misses));
  }
}

std::string FrontierPointsJson(const std::vector<FrontierPoint>& points,
                               const std::vector<int>& usable_points,
                               const std::vector<std::string>& schedules) {
  std::vector<bool> dominant(points.size(), false);
  for (int i : NonDominated(points)) dominant[i] = true;
  std::vector<bool> usable(points.size(), false);
  for (int i : usable_points) usable[i] = true;
  std::string out = "[";
  for (size_t i = 0; i < points.size(); ++i) {
    const FrontierPoint& p = points[i];
    absl::StrAppend(&out, i == 0 ? "" : ", ", "{\"aim_bytes\": ", p.aim_bytes,
                    ", \"peak_bytes\": ", p.peak_bytes,
                    ", \"extra_flops\": ", JsonNumber(p.extra_flops),
                    ", \"kept\": ", p.kept ? "true" : "false",
                    ", \"on_frontier\": ", dominant[i] ? "true" : "false",
                    ", \"usable\": ", usable[i] ? "true" : "false");
    // Named where it is another schedule's (other_schedules.h).
    if (p.schedule > 0 && p.schedule < static_cast<int>(schedules.size())) {
      absl::StrAppend(&out,
                      ", \"schedule\": ", JsonQuote(schedules[p.schedule]));
    }
    // A plan between two neighbours: the compute cap it was made under.
    if (p.cap_flops >= 0) {
      absl::StrAppend(&out, ", \"cap_flops\": ", JsonNumber(p.cap_flops));
    }
    // `path`'s plan of single recomputations (PlanUnchainedAt).
    if (!p.chains) absl::StrAppend(&out, ", \"chains\": false");
    absl::StrAppend(&out, "}");
  }
  return out + "]";
}

std::string FrontierFieldJson(const RematReport& report) {
  return absl::StrCat(
      "{\"chosen\": ",
      report.frontier_chosen.has_value() ? absl::StrCat(*report.frontier_chosen)
                                         : std::string("null"),
      ", \"start_bytes\": ", report.frontier_start_bytes, ", \"points\": ",
      FrontierPointsJson(report.frontier, report.frontier_usable,
                         report.frontier_schedules),
      "}");
}

}  // namespace

absl::string_view NumericsName(Numerics numerics) {
  switch (numerics) {
    case Numerics::kSkipped:
      return "skipped";
    case Numerics::kEqual:
      return "equal";
    case Numerics::kDiffer:
      return "differ";
  }
  return "unknown";
}

absl::string_view FrontierCacheUseName(FrontierCacheUse use) {
  switch (use) {
    case FrontierCacheUse::kOff:
      return "off";
    case FrontierCacheUse::kSearched:
      return "searched";
    case FrontierCacheUse::kUsed:
      return "used";
    case FrontierCacheUse::kStale:
      return "stale";
    case FrontierCacheUse::kUnreadable:
      return "unreadable";
  }
  return "unknown";
}

std::string RematReport::FrontierJson() const {
  return absl::StrCat(
      "{\n  \"module\": ", JsonQuote(module),
      ",\n  \"algorithm\": ", JsonQuote(algorithm),
      ",\n  \"memory_figure\": ", JsonQuote(MemoryFigureName(memory_figure)),
      ",\n  \"allocation_before_bytes\": ", allocation_before_bytes,
      ",\n  \"floor_bytes\": ", floor_bytes,
      ",\n  \"budget_bytes\": ", budget_bytes,
      ",\n  \"flops_before\": ", JsonNumber(flops_before),
      ",\n  \"frontier\": ", FrontierFieldJson(*this), "\n}\n");
}

absl::Status WriteFrontierJson(const RematReport& report,
                               const std::string& path) {
  std::ofstream out(path);
  out << report.FrontierJson();
  if (!out) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot write the frontier"));
  }
  return absl::OkStatus();
}

void RematReport::AddNote(absl::string_view text) {
  absl::StrAppend(&note, note.empty() ? "" : "; ", text);
}

void RematReport::AddPhase(absl::string_view phase, double seconds) {
  for (auto& [name, total] : phase_seconds) {
    if (name == phase) {
      total += seconds;
      return;
    }
  }
  phase_seconds.emplace_back(std::string(phase), seconds);
}

std::string RematReport::ToJson() const {
  std::string out = "{\n";
  auto field = [&](absl::string_view key, const std::string& value) {
    absl::StrAppend(&out, "  ", JsonQuote(key), ": ", value, ",\n");
  };
  field("module", JsonQuote(module));
  field("algorithm", JsonQuote(algorithm));
  field("scheduler", JsonQuote(scheduler));
  field("scheduler_chosen", JsonQuote(scheduler_chosen));
  field("budget_bytes", absl::StrCat(budget_bytes));
  field("peak_before_bytes", absl::StrCat(peak_before_bytes));
  field("peak_scheduled_bytes", absl::StrCat(peak_scheduled_bytes));
  field("peak_after_bytes", absl::StrCat(peak_after_bytes));
  field("heap_sim_before_bytes", absl::StrCat(heap_sim_before_bytes));
  field("heap_sim_scheduled_bytes", absl::StrCat(heap_sim_scheduled_bytes));
  field("heap_sim_after_bytes", absl::StrCat(heap_sim_after_bytes));
  field("memory_figure", JsonQuote(MemoryFigureName(memory_figure)));
  field("allocation_before_bytes", absl::StrCat(allocation_before_bytes));
  field("allocation_after_bytes", absl::StrCat(allocation_after_bytes));
  field("floor_bytes", absl::StrCat(floor_bytes));
  field("floor_at", JsonQuote(floor_at));
  field("budget_met", budget_met ? "true" : "false");
  field("instructions_before", absl::StrCat(instructions_before));
  field("instructions_after", absl::StrCat(instructions_after));
  field("instructions_added", absl::StrCat(instructions_added));
  field("recomputed", absl::StrCat(recomputed));
  field("compressed", absl::StrCat(compressed));
  field("undone", absl::StrCat(undone));
  field("out_of_line", absl::StrCat(out_of_line));
  field("pinned", absl::StrCat(pinned));
  field("hoisted", absl::StrCat(hoisted));
  field("hoisted_bytes", absl::StrCat(hoisted_bytes));
  field("invariant_stacks_removed", absl::StrCat(invariant_stacks_removed));
  field("invariant_stack_bytes", absl::StrCat(invariant_stack_bytes));
  field("flops_before", JsonNumber(flops_before));
  field("flops_after", JsonNumber(flops_after));
  field("max_extra_flops", JsonNumber(max_extra_flops));
  field("stopped_by_flops_cap", stopped_by_flops_cap ? "true" : "false");
  field("pass_seconds", JsonNumber(pass_seconds));
  std::string phases = "{";
  for (size_t i = 0; i < phase_seconds.size(); ++i) {
    absl::StrAppend(&phases, i == 0 ? "" : ", ",
                    JsonQuote(phase_seconds[i].first), ": ",
                    JsonNumber(phase_seconds[i].second));
  }
  field("phase_seconds", phases + "}");
  field("plans_tried", absl::StrCat(plans_tried));
  field("sweeps_replayed", absl::StrCat(sweeps_replayed));
  field("sweeps_rescored", absl::StrCat(sweeps_rescored));
  field("judgements", absl::StrCat(judgements));
  field("numerics", JsonQuote(NumericsName(numerics)));
  field("step_time_before_s", JsonNumber(step_time_before_s));
  field("step_time_after_s", JsonNumber(step_time_after_s));
  field("step_time_ratio", JsonNumber(step_time_ratio));
  field("note", JsonQuote(note));
  field("platform", JsonQuote(platform));
  if (platform == "gpu") {
    field("gpu_target", JsonQuote(gpu_target));
    field("buffer_assignment_before_bytes",
          absl::StrCat(buffer_assignment_before_bytes));
    field("buffer_assignment_after_bytes",
          absl::StrCat(buffer_assignment_after_bytes));
    field("multi_output_fusions", absl::StrCat(multi_output_fusions));
    if (gpu_pipeline.has_value()) AddGpuPipelineFields(*gpu_pipeline, field);
  }
  if (optimal.has_value()) field("optimal", OptimalResultJson(*optimal));
  if (!frontier.empty()) field("frontier", FrontierFieldJson(*this));
  field("frontier_cache", JsonQuote(FrontierCacheUseName(frontier_cache)));
  out += "  \"decisions\": [";
  for (size_t i = 0; i < decisions.size(); ++i) {
    const RematDecision& d = decisions[i];
    absl::StrAppend(
        &out, i == 0 ? "\n" : ",\n",
        "    {\"action\": ", JsonQuote(RematActionName(d.action)),
        ", \"value\": ", JsonQuote(d.value),
        ", \"result\": ", JsonQuote(d.result), ", \"at\": ", JsonQuote(d.at),
        ", \"before\": ", JsonQuote(d.before), ", \"instructions\": [",
        NameList(d.instructions), "]", ", \"bytes_saved\": ", d.bytes_saved,
        ", \"cost\": ", JsonNumber(d.cost), "}");
  }
  out += decisions.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace remat
}  // namespace xla
