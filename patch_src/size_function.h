// The byte size of a shape, as the target allocates it.
#ifndef XLA_SERVICE_REMAT_SIZE_FUNCTION_H_
#define XLA_SERVICE_REMAT_SIZE_FUNCTION_H_

#include <cstdint>
#include <functional>

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

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_SIZE_FUNCTION_H_
