// Segment tree over program positions: add a value to a range, query a point
// or the maximum. Keeps the greedy planner's memory profile current in
// O(log n) per change instead of a rescan of the whole schedule.
#ifndef XLA_SERVICE_REMAT_RANGE_MAX_TREE_H_
#define XLA_SERVICE_REMAT_RANGE_MAX_TREE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/log/check.h"

namespace xla {
namespace remat {

class RangeMaxTree {
 public:
  explicit RangeMaxTree(const std::vector<int64_t>& values)
      : n_(static_cast<int>(values.size())),
        max_(4 * std::max(n_, 1), 0),
        add_(4 * std::max(n_, 1), 0) {
    if (n_ > 0) Build(1, 0, n_ - 1, values);
  }

  int size() const { return n_; }

  // Adds `delta` to every position in [lo, hi]; empty ranges are no-ops.
  void Add(int lo, int hi, int64_t delta) {
    lo = std::max(lo, 0);
    hi = std::min(hi, n_ - 1);
    if (lo > hi || delta == 0) return;
    Add(1, 0, n_ - 1, lo, hi, delta);
  }

  int64_t At(int pos) const {
    DCHECK(0 <= pos && pos < n_) << "position " << pos << " of " << n_;
    int node = 1, lo = 0, hi = n_ - 1;
    int64_t acc = 0;
    while (lo != hi) {
      acc += add_[node];
      int mid = (lo + hi) / 2;
      if (pos <= mid) {
        node = 2 * node;
        hi = mid;
      } else {
        node = 2 * node + 1;
        lo = mid + 1;
      }
    }
    return acc + max_[node];
  }

  int64_t Max() const { return n_ == 0 ? 0 : max_[1]; }

  // The maximum over [lo, hi], clipped to the positions; the lowest int64_t
  // for an empty range.
  int64_t Max(int lo, int hi) const {
    lo = std::max(lo, 0);
    hi = std::min(hi, n_ - 1);
    if (lo > hi) return std::numeric_limits<int64_t>::min();
    return Max(1, 0, n_ - 1, lo, hi);
  }

 private:
  void Build(int node, int lo, int hi, const std::vector<int64_t>& values) {
    if (lo == hi) {
      max_[node] = values[lo];
      return;
    }
    int mid = (lo + hi) / 2;
    Build(2 * node, lo, mid, values);
    Build(2 * node + 1, mid + 1, hi, values);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
  }

  int64_t Max(int node, int lo, int hi, int qlo, int qhi) const {
    if (qhi < lo || hi < qlo) return std::numeric_limits<int64_t>::min();
    if (qlo <= lo && hi <= qhi) return max_[node];
    int mid = (lo + hi) / 2;
    return add_[node] + std::max(Max(2 * node, lo, mid, qlo, qhi),
                                 Max(2 * node + 1, mid + 1, hi, qlo, qhi));
  }

  void Add(int node, int lo, int hi, int qlo, int qhi, int64_t delta) {
    if (qhi < lo || hi < qlo) return;
    if (qlo <= lo && hi <= qhi) {
      max_[node] += delta;
      add_[node] += delta;
      return;
    }
    int mid = (lo + hi) / 2;
    Add(2 * node, lo, mid, qlo, qhi, delta);
    Add(2 * node + 1, mid + 1, hi, qlo, qhi, delta);
    max_[node] = add_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
  }

  int n_;
  std::vector<int64_t> max_;  // max of the subtree, including add_[node]
  std::vector<int64_t> add_;  // pending addition for the whole subtree
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_RANGE_MAX_TREE_H_
