#include "numerics_check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cpu_runner.h"
#include "xla/client/local_client.h"
#include "xla/literal.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace hlo_remat {

absl::StatusOr<NumericsResult> CompareNumerics(const xla::HloModule& original,
                                               const xla::HloModule& changed,
                                               unsigned seed) {
  TF_ASSIGN_OR_RETURN(xla::LocalClient * client, HostClient());
  const std::vector<xla::Literal> arguments = RandomArguments(original, seed);
  auto run = [&](const xla::HloModule& module)
      -> absl::StatusOr<std::vector<std::shared_ptr<xla::Literal>>> {
    TF_ASSIGN_OR_RETURN(CompiledModule compiled,
                        CompiledModule::Compile(*client, module, arguments));
    TF_ASSIGN_OR_RETURN(xla::Literal literal, compiled.RunToLiteral());
    std::vector<std::shared_ptr<xla::Literal>> out;
    out.push_back(std::make_shared<xla::Literal>(std::move(literal)));
    return out;
  };
  TF_ASSIGN_OR_RETURN(auto expected, run(original));
  TF_ASSIGN_OR_RETURN(auto actual, run(changed));
  NumericsResult result;
  if (expected.size() != actual.size()) {
    result.detail =
        absl::StrCat("output count ", expected.size(), " vs ", actual.size());
    return result;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const xla::Literal& a = *expected[i];
    const xla::Literal& b = *actual[i];
    if (!xla::ShapeUtil::Equal(a.shape(), b.shape())) {
      result.detail = absl::StrCat("output ", i, " shapes differ");
      return result;
    }
    std::string first_difference;
    xla::ShapeUtil::ForEachSubshape(
        a.shape(), [&](const xla::Shape& shape, const xla::ShapeIndex& index) {
          if (!shape.IsArray() || !first_difference.empty()) return;
          if (std::memcmp(a.untyped_data(index), b.untyped_data(index),
                          a.size_bytes(index)) == 0) {
            return;
          }
          first_difference =
              absl::StrCat("output ", index.ToString(), " ",
                           xla::ShapeUtil::HumanString(shape), " differs");
          if (shape.element_type() == xla::F32) {
            const float* x = static_cast<const float*>(a.untyped_data(index));
            const float* y = static_cast<const float*>(b.untyped_data(index));
            int64_t count = 0;
            double max_abs = 0;
            for (int64_t e = 0; e < xla::ShapeUtil::ElementsIn(shape); ++e) {
              if (std::memcmp(&x[e], &y[e], sizeof(float)) != 0) {
                ++count;
                max_abs = std::max(max_abs, std::fabs(double{x[e]} - y[e]));
              }
            }
            absl::StrAppend(&first_difference, " in ", count,
                            " elements, max |diff| ", max_abs);
          }
        });
    if (!first_difference.empty()) {
      result.detail = first_difference;
      return result;
    }
  }
  result.equal = true;
  result.detail = absl::StrCat(expected.size(), " outputs bit-identical");
  return result;
}

}  // namespace hlo_remat
