#include "numerics_check.h"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/builder/xla_computation.h"
#include "xla/literal.h"
#include "xla/client/client_library.h"
#include "xla/client/local_client.h"
#include "xla/service/platform_util.h"
#include "xla/service/shaped_buffer.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace hlo_remat {
namespace {

// Values in a small range: labels and indices stay valid-ish, floats finite.
void FillRandom(xla::Literal& literal, std::mt19937& rng) {
  xla::ShapeUtil::ForEachSubshape(
      literal.shape(), [&](const xla::Shape& shape, const xla::ShapeIndex& index) {
        if (!shape.IsArray()) return;
        const int64_t n = xla::ShapeUtil::ElementsIn(shape);
        void* data = literal.untyped_data(index);
        switch (shape.element_type()) {
          case xla::F32: {
            std::uniform_real_distribution<float> d(-1, 1);
            float* p = static_cast<float*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
            break;
          }
          case xla::F64: {
            std::uniform_real_distribution<double> d(-1, 1);
            double* p = static_cast<double*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
            break;
          }
          case xla::S32: {
            std::uniform_int_distribution<int32_t> d(0, 9);
            int32_t* p = static_cast<int32_t*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
            break;
          }
          case xla::S64: {
            std::uniform_int_distribution<int64_t> d(0, 9);
            int64_t* p = static_cast<int64_t*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
            break;
          }
          case xla::PRED: {
            std::uniform_int_distribution<int> d(0, 1);
            bool* p = static_cast<bool*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng) == 1;
            break;
          }
          default: {
            // Other types: small random bytes in the low bits of each byte.
            std::uniform_int_distribution<int> d(0, 3);
            uint8_t* p = static_cast<uint8_t*>(data);
            const int64_t bytes = literal.size_bytes(index);
            for (int64_t i = 0; i < bytes; ++i) p[i] = d(rng);
            break;
          }
        }
      });
}

absl::StatusOr<std::vector<std::shared_ptr<xla::Literal>>> Execute(
    xla::LocalClient& client, const xla::HloModule& module,
    const std::vector<xla::Literal>& arguments) {
  xla::XlaComputation computation(module.ToProto());
  xla::ExecutableBuildOptions build_options;
  // Keep the module exactly as given: its schedule and its clones.
  build_options.set_run_backend_only(true);
  std::vector<const xla::Shape*> argument_layouts;
  for (const xla::Literal& argument : arguments) {
    argument_layouts.push_back(&argument.shape());
  }
  TF_ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<xla::LocalExecutable>> executables,
      client.Compile(computation, argument_layouts, build_options));
  std::vector<xla::ScopedShapedBuffer> buffers;
  std::vector<const xla::ShapedBuffer*> handles;
  buffers.reserve(arguments.size());
  for (const xla::Literal& argument : arguments) {
    TF_ASSIGN_OR_RETURN(xla::ScopedShapedBuffer buffer,
                        client.LiteralToShapedBuffer(argument, 0));
    buffers.push_back(std::move(buffer));
  }
  for (const xla::ScopedShapedBuffer& buffer : buffers) {
    handles.push_back(&buffer);
  }
  xla::ExecutableRunOptions run_options;
  run_options.set_allocator(client.backend().memory_allocator());
  run_options.set_intra_op_thread_pool(
      client.backend().eigen_intra_op_thread_pool_device());
  TF_ASSIGN_OR_RETURN(xla::ScopedShapedBuffer result,
                      executables[0]->Run(handles, run_options));
  TF_ASSIGN_OR_RETURN(xla::Literal literal,
                      client.ShapedBufferToLiteral(result));
  std::vector<std::shared_ptr<xla::Literal>> out;
  out.push_back(std::make_shared<xla::Literal>(std::move(literal)));
  return out;
}

}  // namespace

absl::StatusOr<NumericsResult> CompareNumerics(const xla::HloModule& original,
                                               const xla::HloModule& changed,
                                               unsigned seed) {
  TF_ASSIGN_OR_RETURN(stream_executor::Platform * platform,
                      xla::PlatformUtil::GetPlatform("Host"));
  TF_ASSIGN_OR_RETURN(xla::LocalClient * client,
                      xla::ClientLibrary::GetOrCreateLocalClient(platform));
  std::mt19937 rng(seed);
  std::vector<xla::Literal> arguments;
  const xla::HloComputation* entry = original.entry_computation();
  for (const xla::HloInstruction* parameter : entry->parameter_instructions()) {
    xla::Literal literal(parameter->shape());
    FillRandom(literal, rng);
    arguments.push_back(std::move(literal));
  }
  TF_ASSIGN_OR_RETURN(auto expected, Execute(*client, original, arguments));
  TF_ASSIGN_OR_RETURN(auto actual, Execute(*client, changed, arguments));
  NumericsResult result;
  if (expected.size() != actual.size()) {
    result.detail = absl::StrCat("output count ", expected.size(), " vs ",
                                 actual.size());
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
          first_difference = absl::StrCat("output ", index.ToString(), " ",
                                          xla::ShapeUtil::HumanString(shape),
                                          " differs");
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
