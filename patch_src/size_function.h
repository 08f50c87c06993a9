// The byte size of a shape, as the target allocates it.
#ifndef XLA_SERVICE_REMAT_SIZE_FUNCTION_H_
#define XLA_SERVICE_REMAT_SIZE_FUNCTION_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/shape.h"
#include "xla/shape_util.h"

namespace xla {
namespace remat {

using SizeFunction = std::function<int64_t(const Shape&)>;

// Dense bytes, with 8-byte pointers for tuple tables (CPU and GPU).
inline int64_t PlainBytes(const Shape& shape) {
  if (shape.IsTuple() || shape.IsArray()) {
    return ShapeUtil::ByteSizeOf(shape, /*pointer_size=*/8);
  }
  return 0;  // tokens, opaque
}

// Bytes on a target that stores arrays in tiles of `rows` x `cols` elements
// over the two most-minor dimensions of the layout (as TPUs do with 8x128):
// the minor dimension is padded to `cols`, the second-minor to `rows`. This
// is where a layout change can save memory without losing a bit.
SizeFunction TiledBytes(int64_t rows, int64_t cols);

// "plain", "tiled" (8x128) or "tiled:RxC".
absl::StatusOr<SizeFunction> ParseSizeFunction(absl::string_view text);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_SIZE_FUNCTION_H_
