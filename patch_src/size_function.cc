#include "xla/service/remat/size_function.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "xla/layout_util.h"
#include "xla/primitive_util.h"

namespace xla {
namespace remat {
namespace {

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

SizeFunction TiledBytes(int64_t rows, int64_t cols) {
  return [rows, cols](const Shape& shape) -> int64_t {
    if (!shape.IsArray()) return PlainBytes(shape);
    const int64_t element_bytes =
        primitive_util::ByteWidth(shape.element_type());
    const int rank = shape.dimensions().size();
    if (rank == 0 || !shape.has_layout()) return PlainBytes(shape);
    const Layout& layout = shape.layout();
    int64_t elements = 1;
    for (int i = 0; i < rank; ++i) {
      int64_t extent = shape.dimensions(layout.minor_to_major(i));
      if (i == 0) extent = RoundUp(extent, cols);
      if (i == 1) extent = RoundUp(extent, rows);
      elements *= extent;
    }
    // A rank-1 array still occupies whole tiles.
    if (rank == 1) elements *= rows;
    return elements * element_bytes;
  };
}

absl::StatusOr<SizeFunction> ParseSizeFunction(absl::string_view text) {
  if (text == "plain") return SizeFunction(PlainBytes);
  if (text == "tiled") return TiledBytes(8, 128);
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() == 2 && parts[0] == "tiled") {
    const std::vector<std::string> dims = absl::StrSplit(parts[1], 'x');
    int64_t rows = 0, cols = 0;
    if (dims.size() == 2 && absl::SimpleAtoi(dims[0], &rows) &&
        absl::SimpleAtoi(dims[1], &cols) && rows > 0 && cols > 0) {
      return TiledBytes(rows, cols);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--size-function=", text,
      " is not valid; choose plain, tiled (8x128) or tiled:RxC, e.g. "
      "tiled:8x128"));
}

}  // namespace remat
}  // namespace xla
