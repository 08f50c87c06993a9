#include "xla/service/remat/optimal_model.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace xla {
namespace remat {
namespace {

// Added to every move's FLOPs in the objective: of two plans with the same
// FLOPs the one with fewer moves wins (zero-FLOP nodes are not moved for
// nothing). Far below any node's FLOPs; never in a reported figure.
constexpr double kMoveCost = 1e-3;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool LiveToEnd(const RematGraphNode& node) {
  return std::any_of(node.buffers.begin(), node.buffers.end(),
                     [](const RematGraphBuffer& b) { return b.live_to_end; });
}

int64_t AllBytes(const RematGraphNode& node) {
  int64_t bytes = 0;
  for (const RematGraphBuffer& b : node.buffers) bytes += b.bytes;
  return bytes;
}

// Bytes of its buffers still alive at `stage` when nothing is dropped.
int64_t BytesAliveAt(const RematGraphNode& node, int stage) {
  int64_t bytes = 0;
  for (const RematGraphBuffer& b : node.buffers) {
    if (b.live_to_end || b.last_position >= stage) bytes += b.bytes;
  }
  return bytes;
}

// Bytes kept past its own stage (its buffers read later).
int64_t HeldBytes(const RematGraphNode& node) {
  int64_t bytes = 0;
  for (const RematGraphBuffer& b : node.buffers) {
    if (b.live_to_end || b.last_position > node.position) bytes += b.bytes;
  }
  return bytes;
}

void AddOver(std::vector<int64_t>& delta, int first, int last, int64_t bytes) {
  delta[first] += bytes;
  delta[last + 1] -= bytes;
}

void RunningSum(std::vector<int64_t>& values) {
  for (size_t i = 1; i < values.size(); ++i) values[i] += values[i - 1];
}

}  // namespace

OptimalModel::OptimalModel(const RematGraph& graph, int depth,
                           const std::vector<bool>& may_recompute)
    : graph_(graph) {
  ComputeStages(depth, may_recompute);
  AddColumns();
  AddPresenceRows();
  AddMemoryRanges();
}

void OptimalModel::ComputeStages(int depth,
                                 const std::vector<bool>& may_recompute) {
  const std::vector<RematGraphNode>& nodes = graph_.nodes;
  const int n = static_cast<int>(nodes.size());
  readers_.assign(n, {});
  for (int index = 0; index < n; ++index) {
    for (int read : nodes[index].reads) readers_[read].push_back(index);
  }
  auto recomputable = [&](int index) {
    return nodes[index].recomputable && !LiveToEnd(nodes[index]) &&
           index < static_cast<int>(may_recompute.size()) &&
           may_recompute[index];
  };
  // Stages where a node may be recomputed: where a reader runs (depth 1),
  // or where a recomputable reader may itself be (depth d: chains of d).
  std::vector<std::set<int>> direct(n);
  for (int index = 0; index < n; ++index) {
    for (int reader : readers_[index]) {
      direct[index].insert(nodes[reader].position);
    }
  }
  // A clone runs where what it reads is not yet written over.
  auto may_run_at = [&](int index, int stage) {
    return stage > nodes[index].position &&
           stage <= nodes[index].readable_until;
  };
  std::vector<std::set<int>> level = direct;
  for (int step = 1; step < depth; ++step) {
    std::vector<std::set<int>> next = direct;
    for (int index = 0; index < n; ++index) {
      for (int reader : readers_[index]) {
        if (!recomputable(reader)) continue;
        for (int stage : level[reader]) {
          if (may_run_at(reader, stage)) next[index].insert(stage);
        }
      }
    }
    level = std::move(next);
  }
  recompute_stages_.assign(n, {});
  for (int index = 0; index < n; ++index) {
    if (!recomputable(index)) continue;
    for (int stage : level[index]) {
      if (may_run_at(index, stage)) recompute_stages_[index].push_back(stage);
    }
  }
  // Events of each value: its stage, its readers' stages, the stages where
  // a reader may be recomputed, and the end for outputs.
  events_.assign(n, {});
  last_use_.assign(n, 0);
  for (int index = 0; index < n; ++index) {
    const RematGraphNode& node = nodes[index];
    std::set<int> needed = direct[index];
    for (int reader : readers_[index]) {
      needed.insert(recompute_stages_[reader].begin(),
                    recompute_stages_[reader].end());
    }
    int last = direct[index].empty() ? node.position : *direct[index].rbegin();
    if (LiveToEnd(node)) {
      needed.insert(graph_.positions - 1);
      last = graph_.positions - 1;
    }
    last_use_[index] = last;
    events_[index].push_back(node.position);
    for (int stage : needed) {
      if (stage > node.position) events_[index].push_back(stage);
    }
  }
}

int OptimalModel::AddColumn(double flops, double cost, double lower) {
  column_flops_.push_back(flops);
  column_cost_.push_back(cost);
  column_lower_.push_back(lower);
  return static_cast<int>(column_flops_.size()) - 1;
}

void OptimalModel::AddColumns() {
  const std::vector<RematGraphNode>& nodes = graph_.nodes;
  const int n = static_cast<int>(nodes.size());
  keep_.assign(n, {});
  recompute_.assign(n, {});
  dropped_.assign(n, -1);
  for (int index = 0; index < n; ++index) {
    const RematGraphNode& node = nodes[index];
    const std::vector<int>& events = events_[index];
    // A value nothing may recompute is held to its last reader; beyond it
    // (to a recomputed reader) holding it is a choice.
    const bool fixed = recompute_stages_[index].empty();
    for (size_t g = 1; g < events.size(); ++g) {
      const bool must = fixed && events[g] <= last_use_[index];
      keep_[index].push_back(AddColumn(0.0, 0.0, must ? 1.0 : 0.0));
    }
    for (int stage : recompute_stages_[index]) {
      recompute_[index][stage] =
          AddColumn(node.flops, node.flops + kMoveCost, 0.0);
    }
    // A value every reader gets from a recomputation need not run at its
    // own stage: dropping that run saves its FLOPs and its bytes there.
    if (!recompute_[index].empty() && !keep_[index].empty()) {
      dropped_[index] = AddColumn(-node.flops, kMoveCost - node.flops, 0.0);
    }
  }
}

std::vector<std::pair<int, double>> OptimalModel::Presence(int node,
                                                           int stage) const {
  const std::vector<int>& events = events_[node];
  const int g = static_cast<int>(
      std::lower_bound(events.begin(), events.end(), stage) - events.begin());
  std::vector<std::pair<int, double>> terms = {{keep_[node][g - 1], 1.0}};
  auto column = recompute_[node].find(stage);
  if (column != recompute_[node].end()) terms.push_back({column->second, 1.0});
  return terms;
}

void OptimalModel::AddPresenceRows() {
  const std::vector<RematGraphNode>& nodes = graph_.nodes;
  for (int index = 0; index < static_cast<int>(nodes.size()); ++index) {
    const std::vector<int>& events = events_[index];
    if (dropped_[index] >= 0) {  // held from its stage only if run there
      rows_.AddRow({{keep_[index][0], 1.0}, {dropped_[index], 1.0}}, -kInfinity,
                   1.0);
    }
    // Held into the gap after an event only if present at it.
    for (size_t g = 1; g + 1 < events.size(); ++g) {
      std::vector<std::pair<int, double>> terms = Presence(index, events[g]);
      terms.push_back({keep_[index][g], -1.0});
      rows_.AddRow(terms, 0.0, kInfinity);
    }
    // Present where a reader runs, and where a reader is recomputed.
    for (int reader : readers_[index]) {
      std::vector<std::pair<int, double>> terms =
          Presence(index, nodes[reader].position);
      if (dropped_[reader] >= 0) terms.push_back({dropped_[reader], 1.0});
      rows_.AddRow(terms, 1.0, kInfinity);
      for (const auto& [stage, column] : recompute_[reader]) {
        std::vector<std::pair<int, double>> needs = Presence(index, stage);
        needs.push_back({column, -1.0});
        rows_.AddRow(needs, 0.0, kInfinity);
      }
    }
  }
}

void OptimalModel::AddHeldPieces(int node, int column, int first, int last,
                                 std::vector<int64_t>& constant,
                                 std::vector<int64_t>& most) {
  if (first > last) return;
  const RematGraphNode& n = graph_.nodes[node];
  std::set<int> ends;
  for (const RematGraphBuffer& b : n.buffers) {
    if (!b.live_to_end && b.bytes > 0) ends.insert(b.last_position);
  }
  ends.insert(last);
  const bool fixed = column_lower_[column] == 1.0;
  int start = first;
  for (int end : ends) {
    const int stop = std::min(end, last);
    if (stop >= start) {
      int64_t alive = BytesAliveAt(n, start);
      if (alive == 0) alive = HeldBytes(n);
      if (alive != 0) {
        AddOver(fixed ? constant : most, start, stop, alive);
        if (!fixed) ranges_.push_back(Range{column, start, stop, alive});
      }
      start = stop + 1;
    }
    if (start > last) break;
  }
}

void OptimalModel::AddMemoryRanges() {
  const int size = graph_.positions + 1;
  std::vector<int64_t> constant(size, 0);
  std::vector<int64_t> most(size, 0);
  for (const auto& [stage, held] : graph_.called_bytes) {
    AddOver(constant, stage, stage, held);
  }
  for (int index = 0; index < static_cast<int>(graph_.nodes.size()); ++index) {
    const RematGraphNode& node = graph_.nodes[index];
    const int64_t all_bytes = AllBytes(node);
    AddOver(constant, node.position, node.position, all_bytes);
    if (dropped_[index] >= 0 && all_bytes > 0) {
      ranges_.push_back(
          Range{dropped_[index], node.position, node.position, -all_bytes});
    }
    for (const RematGraphBuffer& b : node.buffers) {
      if (b.first_position < node.position) {  // entry parameters
        AddOver(constant, b.first_position, node.position - 1, b.bytes);
      }
    }
    const std::vector<int>& events = events_[index];
    for (size_t g = 1; g < events.size(); ++g) {
      AddHeldPieces(index, keep_[index][g - 1], events[g - 1] + 1, events[g],
                    constant, most);
    }
    for (const auto& [stage, column] : recompute_[index]) {
      if (all_bytes == 0) continue;
      AddOver(most, stage, stage, all_bytes);
      ranges_.push_back(Range{column, stage, stage, all_bytes});
    }
  }
  RunningSum(constant);
  RunningSum(most);
  constant.pop_back();
  most.pop_back();
  for (size_t stage = 0; stage < most.size(); ++stage) {
    most[stage] += constant[stage];
  }
  constant_ = std::move(constant);
  most_ = std::move(most);
}

MilpProblem OptimalModel::MinFlopsProblem(int64_t budget_bytes,
                                          double max_extra_flops) const {
  MilpProblem problem = rows_;
  problem.cost = column_cost_;
  problem.column_lower = column_lower_;
  problem.column_upper.assign(columns(), 1.0);
  // Memory rows only where everything chosen could pass the budget.
  std::vector<int> row_of(most_.size(), -1);
  std::vector<std::vector<std::pair<int, double>>> terms;
  for (size_t stage = 0; stage < most_.size(); ++stage) {
    if (most_[stage] <= budget_bytes) continue;
    row_of[stage] = static_cast<int>(terms.size());
    terms.emplace_back();
  }
  for (const Range& range : ranges_) {
    for (int stage = range.first; stage <= range.last; ++stage) {
      if (row_of[stage] < 0) continue;
      terms[row_of[stage]].push_back(
          {range.column, static_cast<double>(range.bytes)});
    }
  }
  for (size_t stage = 0; stage < most_.size(); ++stage) {
    if (row_of[stage] < 0) continue;
    problem.AddRow(terms[row_of[stage]], -kInfinity,
                   static_cast<double>(budget_bytes - constant_[stage]));
  }
  if (max_extra_flops >= 0) {
    std::vector<std::pair<int, double>> spent;
    for (int column = 0; column < columns(); ++column) {
      spent.push_back({column, column_flops_[column]});
    }
    problem.AddRow(spent, -kInfinity, max_extra_flops);
  }
  return problem;
}

std::vector<Recomputation> OptimalModel::Plan(
    absl::Span<const double> values) const {
  std::vector<Recomputation> plan;
  for (int index = 0; index < static_cast<int>(recompute_.size()); ++index) {
    for (const auto& [stage, column] : recompute_[index]) {
      if (values[column] > 0.5) plan.push_back(Recomputation{index, stage});
    }
  }
  std::sort(plan.begin(), plan.end(),
            [&](const Recomputation& a, const Recomputation& b) {
              if (a.stage != b.stage) return a.stage < b.stage;
              return graph_.nodes[a.node].position <
                     graph_.nodes[b.node].position;
            });
  return plan;
}

int64_t OptimalModel::Peak(absl::Span<const double> values) const {
  std::vector<int64_t> delta(constant_.size() + 1, 0);
  for (const Range& range : ranges_) {
    if (values[range.column] > 0.5) {
      AddOver(delta, range.first, range.last, range.bytes);
    }
  }
  int64_t peak = 0;
  int64_t running = 0;
  for (size_t stage = 0; stage < constant_.size(); ++stage) {
    running += delta[stage];
    peak = std::max(peak, constant_[stage] + running);
  }
  return peak;
}

double OptimalModel::ExtraFlops(absl::Span<const double> values) const {
  double flops = 0;
  for (int column = 0; column < columns(); ++column) {
    if (values[column] > 0.5) flops += column_flops_[column];
  }
  return flops;
}

std::vector<double> OptimalModel::SolutionOf(
    const std::vector<NodePlan>& plans) const {
  std::vector<double> values(columns(), 0.0);
  for (size_t node = 0; node < keep_.size(); ++node) {
    const std::vector<int>& events = events_[node];
    const NodePlan* plan = node < plans.size() ? &plans[node] : nullptr;
    const bool given = plan != nullptr && !plan->alive.empty();
    for (size_t g = 0; g < keep_[node].size(); ++g) {
      bool held = events[g + 1] <= last_use_[node];
      if (given) {
        held = std::any_of(plan->alive.begin(), plan->alive.end(),
                           [&](const std::pair<int, int>& copy) {
                             return copy.first <= events[g] &&
                                    copy.second >= events[g + 1];
                           });
      }
      values[keep_[node][g]] = held ? 1.0 : 0.0;
    }
    if (plan == nullptr) continue;
    for (int stage : plan->recomputed_at) {
      auto column = recompute_[node].find(stage);
      if (column != recompute_[node].end()) values[column->second] = 1.0;
    }
    if (plan->dropped && dropped_[node] >= 0) values[dropped_[node]] = 1.0;
  }
  return values;
}

int64_t OptimalModel::KeepAllPeak() const {
  std::vector<double> keep_all(columns(), 0.0);
  for (size_t node = 0; node < keep_.size(); ++node) {
    for (size_t g = 0; g < keep_[node].size(); ++g) {
      if (events_[node][g + 1] <= last_use_[node]) keep_all[keep_[node][g]] = 1;
    }
  }
  return Peak(keep_all);
}

}  // namespace remat
}  // namespace xla
