// The least recomputation that meets a budget on a fixed schedule, as a
// mixed-integer program (Checkmate, Jain et al., MLSys 2020, with the
// schedule fixed as the planner has it). The same model as the harness's
// instrument (src/remat_harness/optimum.py), built from the planner's graph
// (remat_graph.h), so that the `optimal` algorithm and the reported optimum
// agree:
//
// - a value may be dropped after any of its events and computed again at a
//   later stage where something needs it: a stage where a reader runs, or
//   where a recomputed reader is rebuilt (chains of up to `depth`
//   producers);
// - binaries: keep[v, g] (value v held across the g-th gap between its
//   events), recompute[v, t], and dropped[v] (v's own run is left out
//   because every reader gets it recomputed);
// - a value is present where a reader runs and where a recomputed reader is
//   rebuilt; memory at each stage counts what is held across it, everything
//   recomputed there and the node run there (no frees inside a stage, so a
//   plan the model accepts fits).
#ifndef XLA_SERVICE_REMAT_OPTIMAL_MODEL_H_
#define XLA_SERVICE_REMAT_OPTIMAL_MODEL_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "xla/service/remat/milp_solver.h"
#include "xla/service/remat/remat_graph.h"

namespace xla {
namespace remat {

// One recomputation of the plan: graph node `node` run again at `stage`.
struct Recomputation {
  int node = 0;
  int stage = 0;
};

class OptimalModel {
 public:
  // `may_recompute[node]`: the caller may apply a recomputation of the node
  // (outputs and nodes the graph marks not recomputable never are).
  OptimalModel(const RematGraph& graph, int depth,
               const std::vector<bool>& may_recompute);

  // The least extra FLOPs with the model's peak at or below `budget_bytes`,
  // spending at most `max_extra_flops` (negative: no cap).
  MilpProblem MinFlopsProblem(int64_t budget_bytes,
                              double max_extra_flops = -1) const;

  // The plan a solution of MinFlopsProblem chose, by stage, then by the
  // node's position (operands before their readers).
  std::vector<Recomputation> Plan(absl::Span<const double> values) const;
  // The model's peak and the extra FLOPs of a solution.
  int64_t Peak(absl::Span<const double> values) const;
  double ExtraFlops(absl::Span<const double> values) const;

  // A plan made otherwise (`path`'s), per node: the stages a clone of its
  // value runs at, whether its own run is gone, and the [first, last] stages
  // each copy of it is alive. A node with no copies listed is held to its
  // last reader. A plan the model cannot express gives a solution that
  // breaks a row (solvers drop such a start).
  struct NodePlan {
    std::vector<int> recomputed_at;
    bool dropped = false;
    std::vector<std::pair<int, int>> alive;
  };
  std::vector<double> SolutionOf(const std::vector<NodePlan>& plans) const;

  // The model's peak when every value is held to its last reader and
  // nothing is recomputed (the tracker's peak).
  int64_t KeepAllPeak() const;
  int columns() const { return static_cast<int>(column_flops_.size()); }

 private:
  // A column's bytes at stages first..last.
  struct Range {
    int column;
    int first;
    int last;
    int64_t bytes;
  };

  int AddColumn(double flops, double cost, double lower);
  void ComputeStages(int depth, const std::vector<bool>& may_recompute);
  void AddColumns();
  // Terms whose sum is 1 when `node` is present at its event `stage`.
  std::vector<std::pair<int, double>> Presence(int node, int stage) const;
  void AddPresenceRows();
  void AddMemoryRanges();
  void AddHeldPieces(int node, int column, int first, int last,
                     std::vector<int64_t>& constant,
                     std::vector<int64_t>& most);

  const RematGraph& graph_;
  std::vector<std::vector<int>> readers_;
  std::vector<std::vector<int>> recompute_stages_;
  std::vector<std::vector<int>> events_;
  std::vector<int> last_use_;
  // Columns: the FLOPs a chosen column adds, its objective (the FLOPs and
  // a little for each move), its lower bound.
  std::vector<double> column_flops_;
  std::vector<double> column_cost_;
  std::vector<double> column_lower_;
  std::vector<std::vector<int>> keep_;         // per node, per gap
  std::vector<std::map<int, int>> recompute_;  // per node: stage -> col
  std::vector<int> dropped_;                   // per node: column or -1
  // The presence rows (MinFlopsProblem adds the memory rows to a copy).
  MilpProblem rows_;
  std::vector<int64_t> constant_;  // bytes at each stage whatever is chosen
  std::vector<int64_t> most_;      // ... when every column is chosen
  std::vector<Range> ranges_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_OPTIMAL_MODEL_H_
