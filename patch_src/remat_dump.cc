#include "xla/service/remat/remat_dump.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/remat_decision.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/env.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

absl::Status WriteText(const std::string& path, const std::string& text) {
  tsl::Env* env = tsl::Env::Default();
  const std::string dir = std::string(path.substr(0, path.rfind('/')));
  if (path.find('/') != std::string::npos && !dir.empty()) {
    TF_RETURN_IF_ERROR(env->RecursivelyCreateDir(dir));
  }
  absl::Status status = tsl::WriteStringToFile(env, path, text);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot write: ", status.message()));
  }
  return absl::OkStatus();
}

std::string HumanBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1e9) return absl::StrFormat("%.2f GB", b / 1e9);
  if (b >= 1e6) return absl::StrFormat("%.2f MB", b / 1e6);
  if (b >= 1e3) return absl::StrFormat("%.1f kB", b / 1e3);
  return absl::StrCat(bytes, " B");
}

std::string DotQuote(absl::string_view s) {
  return absl::StrCat(
      "\"", absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"\"", "\\\""}}), "\"");
}

// Names the report says were added, by kind.
absl::flat_hash_map<std::string, RematAction> AddedBy(
    const RematReport& report) {
  absl::flat_hash_map<std::string, RematAction> added;
  for (const RematDecision& d : report.decisions) {
    for (const std::string& name : d.instructions) {
      if (d.action == RematAction::kTakeBack) {
        added.erase(name);
      } else {
        added[name] = d.action;
      }
    }
  }
  return added;
}

}  // namespace

std::string DumpPath(absl::string_view dir, absl::string_view module_name,
                     absl::string_view suffix) {
  std::string safe(module_name);
  for (char& c : safe) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (safe.empty()) safe = "module";
  return absl::StrCat(dir, "/", safe, ".", suffix);
}

absl::Status WriteDotGraph(const HloModule& module, const SizeFunction& size_fn,
                           const ComputationMemory& memory,
                           const RematReport& report, const std::string& path) {
  const int64_t peak = std::max<int64_t>(1, memory.peak());
  const int64_t threshold =
      static_cast<int64_t>(kDotMinFractionOfPeak * static_cast<double>(peak));
  const absl::flat_hash_map<std::string, RematAction> added = AddedBy(report);
  absl::flat_hash_set<const HloInstruction*> shown;
  int64_t widest = 1;
  for (const HloInstruction* instruction : memory.sequence()) {
    const int64_t bytes = size_fn(instruction->shape());
    if (bytes >= threshold || added.contains(instruction->name())) {
      shown.insert(instruction);
      widest = std::max(widest, bytes);
    }
  }
  std::string out = absl::StrCat(
      "digraph ", DotQuote(module.name()), " {\n  graph [label=",
      DotQuote(absl::StrCat(
          module.name(), ": peak ", HumanBytes(memory.peak()), " at ",
          memory.sequence()[memory.peak_position()]->name(), " (algorithm ",
          report.algorithm, ", budget ", HumanBytes(report.budget_bytes), ")")),
      ", labelloc=t];\n  node [shape=box, style=filled, "
      "fontname=Helvetica];\n");
  for (const HloInstruction* instruction : memory.sequence()) {
    if (!shown.contains(instruction)) continue;
    const int pos = memory.Position(instruction);
    const int64_t in_use = memory.profile()[pos];
    const double pressure = std::clamp(
        static_cast<double>(in_use) / static_cast<double>(peak), 0.0, 1.0);
    std::string label = absl::StrCat(
        instruction->name(), "\\n", HloOpcodeString(instruction->opcode()), " ",
        HumanBytes(size_fn(instruction->shape())), "\\nin use ",
        HumanBytes(in_use));
    std::string extra;
    auto it = added.find(instruction->name());
    if (it != added.end()) {
      const bool compressed = it->second == RematAction::kCompress;
      absl::StrAppend(&label, "\\n", compressed ? "COMPRESSED" : "RECOMPUTED");
      extra = compressed ? ", shape=octagon, color=darkgreen, penwidth=3"
                         : ", shape=doubleoctagon, color=blue, penwidth=3";
    }
    // Hue 0 (red), saturation by memory pressure: white when idle.
    absl::StrAppend(&out, "  ", DotQuote(instruction->name()), " [label=\"",
                    absl::StrReplaceAll(label, {{"\"", "'"}}),
                    "\", fillcolor=\"0.000 ", absl::StrFormat("%.3f", pressure),
                    " 1.000\"", extra, "];\n");
  }
  for (const HloInstruction* instruction : memory.sequence()) {
    if (!shown.contains(instruction)) continue;
    for (const HloInstruction* operand : instruction->unique_operands()) {
      if (!shown.contains(operand)) continue;
      const int64_t bytes = size_fn(operand->shape());
      absl::StrAppend(
          &out, "  ", DotQuote(operand->name()), " -> ",
          DotQuote(instruction->name()),
          " [label=", DotQuote(HumanBytes(bytes)),
          absl::StrFormat(", penwidth=%.2f", 1.0 + 4.0 * bytes / widest),
          "];\n");
    }
  }
  out += "}\n";
  return WriteText(path, out);
}

absl::Status WriteMemoryLog(const HloModule& module,
                            const ComputationMemory& memory,
                            const RematReport& report,
                            const std::string& path) {
  const std::vector<TrackedBuffer>& buffers = memory.buffers();
  const int n = static_cast<int>(memory.sequence().size());
  std::vector<std::vector<int>> born(n), dies(n);
  for (int id = 0; id < static_cast<int>(buffers.size()); ++id) {
    born[std::clamp(buffers[id].def_pos, 0, n - 1)].push_back(id);
    dies[std::clamp(memory.LastPosition(buffers[id]), 0, n - 1)].push_back(id);
  }
  absl::flat_hash_map<std::string, std::vector<const RematDecision*>> by_at;
  std::vector<const RematDecision*> orphans;
  for (const RematDecision& d : report.decisions) {
    by_at[d.at].push_back(&d);
  }
  auto decision_line = [](const RematDecision& d) {
    return absl::StrCat("  decision[", RematActionName(d.action),
                        "] value=", d.value, " result=", d.result, " at=", d.at,
                        " before=", d.before, " bytes_saved=", d.bytes_saved,
                        absl::StrFormat(" cost=%.17g", d.cost), "\n");
  };
  std::string out = absl::StrCat(
      "# rematerialization memory log\n# module ", module.name(), " algorithm ",
      report.algorithm, " scheduler ", report.scheduler, " (kept ",
      report.scheduler_chosen, ") budget ", report.budget_bytes,
      " bytes\n# peak ", memory.peak(), " bytes (tracker) at ",
      memory.sequence()[memory.peak_position()]->name(), "; HeapSimulator ",
      report.heap_sim_after_bytes, " bytes\n",
      "# position instruction in_use_bytes peak_so_far_bytes "
      "largest_live_value largest_live_bytes\n");
  std::set<std::pair<int64_t, int>> live;
  int64_t peak_so_far = 0;
  absl::flat_hash_set<std::string> placed;
  for (int pos = 0; pos < n; ++pos) {
    for (int id : born[pos]) live.insert({buffers[id].size, id});
    const HloInstruction* instruction = memory.sequence()[pos];
    const int64_t in_use = memory.profile()[pos];
    peak_so_far = std::max(peak_so_far, in_use);
    std::string largest = "-";
    int64_t largest_bytes = 0;
    if (!live.empty()) {
      const TrackedBuffer& b = buffers[live.rbegin()->second];
      largest = std::string(b.defining->name());
      if (!b.index.empty()) absl::StrAppend(&largest, b.index.ToString());
      largest_bytes = b.size;
    }
    absl::StrAppend(&out, pos, " ", instruction->name(), " ", in_use, " ",
                    peak_so_far, " ", largest, " ", largest_bytes, "\n");
    auto it = by_at.find(instruction->name());
    if (it != by_at.end()) {
      for (const RematDecision* d : it->second) {
        absl::StrAppend(&out, decision_line(*d));
      }
      placed.insert(std::string(instruction->name()));
    }
    for (int id : dies[pos]) live.erase({buffers[id].size, id});
  }
  bool header = false;
  for (const RematDecision& d : report.decisions) {
    if (placed.contains(d.at)) continue;
    if (!header) {
      out +=
          "# decisions whose trigger instruction is no longer in the module\n";
      header = true;
    }
    absl::StrAppend(&out, decision_line(d));
  }
  return WriteText(path, out);
}

absl::Status WriteModuleText(const HloModule& module, const std::string& path) {
  return WriteText(path, module.ToString());
}

}  // namespace remat
}  // namespace xla
