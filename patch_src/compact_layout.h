// The compact form of a value for the `compress` algorithm.
//
// A value may wait for its late use in another layout that the target stores
// in fewer bytes; the copies into and out of it are exact, so compression is
// never lossy. The one layout change tried is the original patch's: swap the
// two most-minor dimensions, which pays on tiled targets when the minor
// dimension is the smaller one (it is padded to the wide side of the tile).
#ifndef XLA_SERVICE_REMAT_COMPACT_LAYOUT_H_
#define XLA_SERVICE_REMAT_COMPACT_LAYOUT_H_

#include <optional>

#include "xla/service/remat/size_function.h"
#include "xla/shape.h"

namespace xla {
namespace remat {

// The compact shape of `shape`, or nullopt when no layout tried is smaller
// under `size_fn`.
std::optional<Shape> CompactShape(const Shape& shape,
                                  const SizeFunction& size_fn);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_COMPACT_LAYOUT_H_
