#include "xla/service/remat/remat_graph.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/json_text.h"
#include "xla/service/remat/remat_candidates.h"

namespace xla {
namespace remat {
namespace {

// Instructions that only pass buffers on; the tracker counts no use by them.
bool OnlyForwards(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kBitcast:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kDomain:
      return true;
    default:
      return false;
  }
}

std::string NodeJson(const RematGraphNode& node) {
  std::string buffers;
  for (const RematGraphBuffer& buffer : node.buffers) {
    absl::StrAppend(&buffers, buffers.empty() ? "" : ", ", "[", buffer.bytes,
                    ", ", buffer.first_position, ", ", buffer.last_position,
                    ", ", buffer.live_to_end ? "true" : "false", "]");
  }
  std::string reads;
  for (int id : node.reads) {
    absl::StrAppend(&reads, reads.empty() ? "" : ", ", id);
  }
  return absl::StrCat(
      "{\"name\": ", JsonQuote(node.name),
      ", \"opcode\": ", JsonQuote(node.opcode),
      ", \"position\": ", node.position,
      ", \"flops\": ", JsonNumber(node.flops),
      ", \"recomputable\": ", node.recomputable ? "true" : "false",
      ", \"candidate\": ", node.candidate ? "true" : "false",
      ", \"movable\": ", node.movable ? "true" : "false",
      ", \"readable_until\": ", node.readable_until, ", \"buffers\": [",
      buffers, "], \"reads\": [", reads, "]}");
}

// The planner's values (planner_values.cc): one per buffer the producer
// defines that outlives the step's end nowhere and is above the limit; a
// multi-output producer's are read through its get-tuple-elements.
bool PlannerCanMove(const HloInstruction& instruction,
                    const std::vector<RematGraphBuffer>& buffers,
                    int64_t min_candidate_bytes) {
  const int values = static_cast<int>(
      std::count_if(buffers.begin(), buffers.end(), [&](const auto& buffer) {
        return !buffer.live_to_end && buffer.bytes > min_candidate_bytes;
      }));
  if (values != 1) return false;
  if (ClassifyProducer(&instruction) != ProducerKind::kMultiOutput) {
    return UsesCanTakeAClone(instruction, instruction);
  }
  for (const HloInstruction* user : instruction.users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement ||
        !UsesCanTakeAClone(instruction, *user)) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<RematGraph> BuildRematGraph(
    absl::string_view module_name, const ComputationMemory& memory,
    const HloCostAnalysis& costs, int64_t min_candidate_bytes,
    absl::Span<const int> overwritten_at) {
  RematGraph graph;
  graph.module = std::string(module_name);
  graph.positions = static_cast<int>(memory.sequence().size());
  graph.peak_bytes = memory.peak();
  graph.peak_position = memory.peak_position();
  absl::flat_hash_map<const HloInstruction*, int> node_of;
  // Buffers by defining instruction, in the tracker's order.
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> defined;
  for (int id = 0; id < static_cast<int>(memory.buffers().size()); ++id) {
    defined[memory.buffers()[id].defining].push_back(id);
  }
  for (int position = 0; position < graph.positions; ++position) {
    const HloInstruction* instruction = memory.sequence()[position];
    if (const int64_t held = memory.called_bytes()[position]; held > 0) {
      graph.called_bytes.emplace_back(position, held);
    }
    auto own = defined.find(instruction);
    const bool defines = own != defined.end();
    if (!defines && OnlyForwards(*instruction)) continue;
    if (!defines && instruction->opcode() == HloOpcode::kWhile) continue;
    RematGraphNode node;
    node.name = instruction->name();
    node.opcode = std::string(HloOpcodeString(instruction->opcode()));
    node.position = position;
    node.recomputable = instruction->opcode() != HloOpcode::kParameter &&
                        IsRecomputable(instruction);
    node.flops = RecomputeFlops(costs, *instruction);
    int64_t held_bytes = 0;
    if (defines) {
      for (int id : own->second) {
        const TrackedBuffer& buffer = memory.buffers()[id];
        node.buffers.push_back(RematGraphBuffer{buffer.size, buffer.def_pos,
                                                memory.LastPosition(buffer),
                                                buffer.live_to_end});
        held_bytes = std::max(held_bytes, buffer.size);
      }
    }
    node.candidate = node.recomputable && held_bytes > min_candidate_bytes;
    node.movable = node.candidate && PlannerCanMove(*instruction, node.buffers,
                                                    min_candidate_bytes);
    node.readable_until = graph.positions;
    for (const HloInstruction* operand : instruction->unique_operands()) {
      for (int id : memory.AllSources(operand)) {
        if (id < static_cast<int>(overwritten_at.size())) {
          node.readable_until =
              std::min(node.readable_until, overwritten_at[id]);
        }
      }
    }
    // What it reads: the defining nodes of its operands' buffers, as the
    // tracker counts uses (a forwarding op forwards, it does not read).
    const bool forwards = OnlyForwards(*instruction) ||
                          instruction->opcode() == HloOpcode::kWhile;
    // add-dependency forwards operand 0 and reads the rest.
    const int64_t first_read =
        instruction->opcode() == HloOpcode::kAddDependency ? 1 : 0;
    for (int64_t i = first_read; i < instruction->operand_count(); ++i) {
      if (forwards) break;
      for (int id : memory.AllSources(instruction->operand(i))) {
        auto producer = node_of.find(memory.buffers()[id].defining);
        if (producer == node_of.end()) continue;
        if (std::find(node.reads.begin(), node.reads.end(), producer->second) ==
            node.reads.end()) {
          node.reads.push_back(producer->second);
        }
      }
    }
    node_of[instruction] = static_cast<int>(graph.nodes.size());
    graph.nodes.push_back(std::move(node));
  }
  return graph;
}

std::string RematGraphToJson(const RematGraph& graph) {
  std::string called;
  for (const auto& [position, bytes] : graph.called_bytes) {
    absl::StrAppend(&called, called.empty() ? "" : ", ", "[", position, ", ",
                    bytes, "]");
  }
  std::string out = absl::StrCat(
      "{\n\"format\": \"remat-graph/2\",\n\"module\": ",
      JsonQuote(graph.module),
      ",\n\"memory_figure\": ", JsonQuote(graph.memory_figure),
      ",\n\"about\": ",
      JsonQuote(
          "The entry computation on the planner's schedule. A node's buffers "
          "are [bytes, first position, last position, live to end]: live "
          "from first to last (first is the node's position, 0 for entry "
          "parameters). reads: node ids "
          "read at the node's position. readable_until: the last position a "
          "run of the node again may be made at (what it reads is written "
          "over after it). called_bytes: [position, bytes held "
          "by called computations there]. Keeping every value reproduces "
          "peak_bytes (the tracker's figure). Not coarsened: solvers coarsen "
          "as they need and say so."),
      ",\n\"positions\": ", graph.positions,
      ",\n\"peak_bytes\": ", graph.peak_bytes,
      ",\n\"peak_position\": ", graph.peak_position,
      ",\n\"module_flops\": ", JsonNumber(graph.module_flops),
      ",\n\"called_bytes\": [", called, "],\n\"nodes\": [\n");
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    absl::StrAppend(&out, NodeJson(graph.nodes[i]),
                    i + 1 < graph.nodes.size() ? ",\n" : "\n");
  }
  return out + "]\n}\n";
}

absl::Status WriteRematGraph(const RematGraph& graph, const std::string& path) {
  std::ofstream out(path);
  out << RematGraphToJson(graph);
  if (!out) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot write the exported graph"));
  }
  return absl::OkStatus();
}

}  // namespace remat
}  // namespace xla
