#include "xla/service/remat/cost_model.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/gpu/backend_configs.pb.h"
#include "xla/service/remat/library_calls.h"
#include "xla/shape.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"
#include "xla/xla_data.pb.h"

namespace xla {
namespace remat {
namespace {

// The array a library call computes: element 0 of its tuple, the others being
// scratch, workspace or auxiliary outputs.
const Shape& MainResult(const HloInstruction& call) {
  return call.shape().IsTuple() ? call.shape().tuple_shapes(0) : call.shape();
}

// A scratch or workspace buffer: the byte array cuDNN and cuBLAS calls return
// last.
bool IsWorkspace(const Shape& shape) {
  return shape.IsArray() && shape.dimensions().size() == 1 &&
         (shape.element_type() == U8 || shape.element_type() == S8);
}

bool DimsFit(const Shape& shape, int64_t dim) {
  return shape.IsArray() && dim >= 0 &&
         dim < static_cast<int64_t>(shape.dimensions().size());
}

absl::Status BadCall(const HloInstruction& call, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("cost model: ", call.name(), " (", call.custom_call_target(),
                   "): ", why));
}

// The shapes of the forward convolution x (*) w -> y a cuDNN call runs: the
// window and dim_labels on the call describe that convolution in every kind.
absl::StatusOr<int64_t> ConvolutionFlops(const HloInstruction& call,
                                         LibraryCall kind) {
  if (call.operand_count() < 2) return BadCall(call, "fewer than 2 operands");
  const Shape& a = call.operand(0)->shape();
  const Shape& b = call.operand(1)->shape();
  const Shape& result = MainResult(call);
  const Shape* x = &a;
  const Shape* w = &b;
  const Shape* y = &result;
  if (kind == LibraryCall::kConvBackwardInput) {
    x = &result;
    y = &a;
  } else if (kind == LibraryCall::kConvBackwardFilter) {
    w = &result;
    y = &b;
  }
  const ConvolutionDimensionNumbers& dnums =
      call.convolution_dimension_numbers();
  const int spatial = dnums.input_spatial_dimensions_size();
  if (dnums.kernel_spatial_dimensions_size() != spatial ||
      dnums.output_spatial_dimensions_size() != spatial ||
      call.window().dimensions_size() != spatial) {
    return BadCall(call, "dim_labels and window disagree");
  }
  bool fits = DimsFit(*x, dnums.input_batch_dimension()) &&
              DimsFit(*x, dnums.input_feature_dimension()) &&
              DimsFit(*w, dnums.kernel_input_feature_dimension()) &&
              DimsFit(*w, dnums.kernel_output_feature_dimension()) &&
              DimsFit(*y, dnums.output_batch_dimension()) &&
              DimsFit(*y, dnums.output_feature_dimension());
  for (int i = 0; i < spatial && fits; ++i) {
    fits = DimsFit(*x, dnums.input_spatial_dimensions(i)) &&
           DimsFit(*w, dnums.kernel_spatial_dimensions(i)) &&
           DimsFit(*y, dnums.output_spatial_dimensions(i));
  }
  if (!fits) return BadCall(call, "dim_labels do not fit the shapes");
  return HloCostAnalysis::GetConvolutionFlops(&call, *x, *w, *y);
}

absl::StatusOr<std::optional<int64_t>> GemmFlops(const HloInstruction& call) {
  if (call.operand_count() < 2) return BadCall(call, "fewer than 2 operands");
  TF_ASSIGN_OR_RETURN(gpu::GpuBackendConfig config,
                      call.backend_config<gpu::GpuBackendConfig>());
  if (!config.has_gemm_backend_config() ||
      !config.gemm_backend_config().has_dot_dimension_numbers()) {
    return std::optional<int64_t>();
  }
  const DotDimensionNumbers& dnums =
      config.gemm_backend_config().dot_dimension_numbers();
  const Shape& lhs = call.operand(0)->shape();
  for (int64_t dim : dnums.lhs_contracting_dimensions()) {
    if (!DimsFit(lhs, dim)) return BadCall(call, "bad contracting dimension");
  }
  if (!MainResult(call).IsArray()) return BadCall(call, "result not an array");
  return std::optional<int64_t>(
      HloCostAnalysis::GetDotFlops(lhs, MainResult(call), dnums));
}

}  // namespace

RematCostAnalysis::RematCostAnalysis(const SizeFunction& size_fn)
    : HloCostAnalysis(Options{size_fn}) {}

absl::StatusOr<std::optional<int64_t>> LibraryCallFlops(
    const HloInstruction& instruction) {
  const LibraryCall kind = ClassifyLibraryCall(instruction);
  if (kind == LibraryCall::kNone) return std::optional<int64_t>();
  if (kind == LibraryCall::kGemm) return GemmFlops(instruction);
  TF_ASSIGN_OR_RETURN(int64_t flops, ConvolutionFlops(instruction, kind));
  return std::optional<int64_t>(flops);
}

absl::Status RematCostAnalysis::HandleCustomCall(
    const HloInstruction* custom_call) {
  TF_ASSIGN_OR_RETURN(std::optional<int64_t> flops,
                      LibraryCallFlops(*custom_call));
  if (!flops.has_value()) {
    return HloCostAnalysis::HandleCustomCall(custom_call);
  }
  current_properties_[kFlopsKey] = static_cast<float>(*flops);
  // Preprocess counted every output; the workspace is allocated, not moved.
  const Shape& shape = custom_call->shape();
  if (shape.IsTuple() && IsWorkspace(shape.tuple_shapes().back())) {
    const float workspace = GetShapeSize(shape.tuple_shapes().back());
    current_properties_[kBytesAccessedKey] -= workspace;
    current_properties_.set_output_bytes_accessed(
        current_properties_.output_bytes_accessed() - workspace);
  }
  return absl::OkStatus();
}

std::unique_ptr<HloCostAnalysis> RematCostAnalysis::CreateNestedCostAnalysis() {
  return std::make_unique<RematCostAnalysis>(options_);
}

absl::StatusOr<std::unique_ptr<RematCostAnalysis>> AnalyzeCosts(
    const HloModule& module, const SizeFunction& size_fn) {
  auto costs = std::make_unique<RematCostAnalysis>(size_fn);
  TF_RETURN_IF_ERROR(module.entry_computation()->Accept(costs.get()));
  return costs;
}

double RecomputeCost(const HloCostAnalysis& costs,
                     const HloInstruction& instruction) {
  double flops = std::max<double>(0, costs.flop_count(instruction)) +
                 std::max<double>(0, costs.transcendental_count(instruction));
  double bytes = std::max<double>(0, costs.bytes_accessed(instruction));
  return 1.0 + flops + bytes / 4.0;
}

double RecomputeFlops(const HloCostAnalysis& costs,
                      const HloInstruction& instruction) {
  return std::max<double>(0, costs.flop_count(instruction)) +
         std::max<double>(0, costs.transcendental_count(instruction));
}

double ModuleFlops(const HloModule& module, const HloCostAnalysis& costs) {
  double copied = 0;
  for (const HloInstruction* instruction :
       module.entry_computation()->instructions()) {
    if (instruction->opcode() == HloOpcode::kCopy &&
        instruction->shape().IsArray()) {
      copied +=
          static_cast<double>(ShapeUtil::ElementsIn(instruction->shape()));
    }
  }
  return costs.flop_count() + costs.transcendental_count() + copied;
}

}  // namespace remat
}  // namespace xla
