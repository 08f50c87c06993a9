#include "xla/service/remat/articulation_points.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace xla {
namespace remat {

absl::flat_hash_set<const HloInstruction*> ArticulationPoints(
    const HloComputation& computation) {
  std::vector<const HloInstruction*> nodes;
  absl::flat_hash_map<const HloInstruction*, int> id;
  for (const HloInstruction* instruction : computation.instructions()) {
    id[instruction] = static_cast<int>(nodes.size());
    nodes.push_back(instruction);
  }
  const int n = static_cast<int>(nodes.size());
  std::vector<std::vector<int>> adjacent(n);
  for (int v = 0; v < n; ++v) {
    for (const HloInstruction* operand : nodes[v]->unique_operands()) {
      auto it = id.find(operand);
      if (it == id.end() || it->second == v) continue;
      adjacent[v].push_back(it->second);
      adjacent[it->second].push_back(v);
    }
  }
  // Tarjan's low-link, with an explicit stack of (node, next neighbour).
  std::vector<int> discovered(n, -1), low(n, 0), parent(n, -1), children(n, 0);
  std::vector<bool> is_point(n, false);
  int time = 0;
  std::vector<std::pair<int, size_t>> stack;
  for (int root = 0; root < n; ++root) {
    if (discovered[root] >= 0) continue;
    discovered[root] = low[root] = time++;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      if (next < adjacent[v].size()) {
        const int w = adjacent[v][next++];
        if (discovered[w] < 0) {
          parent[w] = v;
          ++children[v];
          discovered[w] = low[w] = time++;
          stack.push_back({w, 0});
        } else if (w != parent[v]) {
          low[v] = std::min(low[v], discovered[w]);
        }
        continue;
      }
      const int finished = v;
      stack.pop_back();
      const int p = parent[finished];
      if (p < 0) continue;
      low[p] = std::min(low[p], low[finished]);
      if (parent[p] >= 0 && low[finished] >= discovered[p]) {
        is_point[p] = true;
      }
    }
    if (children[root] > 1) is_point[root] = true;
  }
  absl::flat_hash_set<const HloInstruction*> points;
  for (int v = 0; v < n; ++v) {
    if (is_point[v]) points.insert(nodes[v]);
  }
  return points;
}

}  // namespace remat
}  // namespace xla
