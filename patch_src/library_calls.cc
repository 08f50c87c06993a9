#include "xla/service/remat/library_calls.h"

#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"

namespace xla {
namespace remat {

LibraryCall ClassifyLibraryCall(const HloInstruction& instruction) {
  if (instruction.opcode() != HloOpcode::kCustomCall) return LibraryCall::kNone;
  if (instruction.HasSideEffect()) return LibraryCall::kNone;
  const absl::string_view target = instruction.custom_call_target();
  if (target == "__cudnn$convForward") return LibraryCall::kConvForward;
  if (target == "__cudnn$convBiasActivationForward") {
    return LibraryCall::kConvBiasActivationForward;
  }
  if (target == "__cudnn$convBackwardInput") {
    return LibraryCall::kConvBackwardInput;
  }
  if (target == "__cudnn$convBackwardFilter") {
    return LibraryCall::kConvBackwardFilter;
  }
  // The f8 matmul carries scale operands with their own semantics: left out.
  if (target == "__cublas$gemm" || target == "__cublas$lt$matmul") {
    return LibraryCall::kGemm;
  }
  return LibraryCall::kNone;
}

bool IsConvolution(LibraryCall call) {
  switch (call) {
    case LibraryCall::kConvForward:
    case LibraryCall::kConvBiasActivationForward:
    case LibraryCall::kConvBackwardInput:
    case LibraryCall::kConvBackwardFilter:
      return true;
    case LibraryCall::kNone:
    case LibraryCall::kGemm:
      return false;
  }
  return false;
}

}  // namespace remat
}  // namespace xla
