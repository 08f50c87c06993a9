#include "xla/service/remat/compact_layout.h"

#include <cstdint>
#include <optional>

#include "xla/layout.h"

namespace xla {
namespace remat {

std::optional<Shape> CompactShape(const Shape& shape,
                                  const SizeFunction& size_fn) {
  if (!shape.IsArray() || !shape.has_layout()) return std::nullopt;
  if (shape.dimensions().size() < 2 || shape.is_dynamic()) return std::nullopt;
  const Layout& layout = shape.layout();
  // Tiled or sub-byte layouts carry more than a dimension order; leave them.
  if (!layout.tiles().empty() || layout.element_size_in_bits() != 0) {
    return std::nullopt;
  }
  Shape compact = shape;
  Layout* swapped = compact.mutable_layout();
  const int64_t minor = layout.minor_to_major(0);
  const int64_t second = layout.minor_to_major(1);
  swapped->set_minor_to_major(0, second);
  swapped->set_minor_to_major(1, minor);
  if (size_fn(compact) >= size_fn(shape)) return std::nullopt;
  return compact;
}

}  // namespace remat
}  // namespace xla
