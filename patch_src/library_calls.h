// The library custom-calls the engine understands: a closed allow-list of
// targets whose result depends only on their operands (cuDNN convolutions,
// cuBLAS GEMMs). Any other custom-call is opaque: it may have effects or read
// state the engine cannot see, so it is never recomputed and its cost is
// unknown.
#ifndef XLA_SERVICE_REMAT_LIBRARY_CALLS_H_
#define XLA_SERVICE_REMAT_LIBRARY_CALLS_H_

#include "xla/hlo/ir/hlo_instruction.h"

namespace xla {
namespace remat {

enum class LibraryCall {
  kNone,  // not a custom-call, or a target outside the allow-list
  // cuDNN convolutions; the window and dim_labels on the instruction describe
  // the forward convolution input x kernel -> output in every kind.
  kConvForward,                // (x, w, ...) -> y
  kConvBiasActivationForward,  // (x, w, bias[, side input]) -> y
  kConvBackwardInput,          // (dy, w) -> dx
  kConvBackwardFilter,         // (x, dy) -> dw
  // cuBLAS GEMMs; dot dimension numbers in gemm_backend_config.
  kGemm,
};

// The allow-listed kind of `instruction`; kNone for anything else, including
// an allow-listed target marked custom_call_has_side_effect.
LibraryCall ClassifyLibraryCall(const HloInstruction& instruction);

bool IsConvolution(LibraryCall call);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_LIBRARY_CALLS_H_
