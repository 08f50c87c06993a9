#include "xla/service/remat/remat_candidates.h"

#include <vector>

#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/service/remat/library_calls.h"
#include "xla/shape.h"

namespace xla {
namespace remat {
namespace {

// A user that holds on to the value it reads as a whole: its later uses
// cannot be redirected to a clone alone.
bool PinsWhatItReads(const HloInstruction& user) {
  switch (user.opcode()) {
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kWhile:
    case HloOpcode::kAddDependency:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kDomain:
      return true;
    default:
      return false;
  }
}

bool OpcodeMayBeRecomputed(const HloInstruction* instruction) {
  switch (instruction->opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kCustomCall:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall:
    case HloOpcode::kRng:
    case HloOpcode::kRngBitGenerator:
    case HloOpcode::kRngGetAndUpdateState:
    case HloOpcode::kInfeed:
    case HloOpcode::kOutfeed:
    case HloOpcode::kSend:
    case HloOpcode::kSendDone:
    case HloOpcode::kRecv:
    case HloOpcode::kRecvDone:
    case HloOpcode::kAfterAll:
    case HloOpcode::kAddDependency:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllGatherDone:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllReduceDone:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kCollectivePermuteDone:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAsyncStart:
    case HloOpcode::kAsyncUpdate:
    case HloOpcode::kAsyncDone:
    case HloOpcode::kCopyStart:
    case HloOpcode::kCopyDone:
    case HloOpcode::kPartitionId:
    case HloOpcode::kReplicaId:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kBitcast:
    case HloOpcode::kDomain:
      return false;
    default:
      return true;
  }
}

bool ComputationIsPure(const HloComputation* computation) {
  for (const HloInstruction* inner : computation->instructions()) {
    if (inner->HasSideEffect() || !OpcodeMayBeRecomputed(inner)) {
      // Parameters, constants, tuples and GTEs are harmless inside bodies.
      switch (inner->opcode()) {
        case HloOpcode::kParameter:
        case HloOpcode::kConstant:
        case HloOpcode::kTuple:
        case HloOpcode::kGetTupleElement:
        case HloOpcode::kBitcast:
          continue;
        default:
          return false;
      }
    }
    for (const HloComputation* called : inner->called_computations()) {
      if (!ComputationIsPure(called)) return false;
    }
  }
  return true;
}

// A tuple whose elements are all arrays: each is one buffer a
// get-tuple-element can hand out.
bool IsFlatTupleOfArrays(const Shape& shape) {
  if (!shape.IsTuple() || shape.tuple_shapes().empty()) return false;
  for (const Shape& element : shape.tuple_shapes()) {
    if (!element.IsArray()) return false;
  }
  return true;
}

}  // namespace

ProducerKind ClassifyProducer(const HloInstruction* instruction) {
  const bool library = ClassifyLibraryCall(*instruction) != LibraryCall::kNone;
  if (!library && !OpcodeMayBeRecomputed(instruction)) {
    return ProducerKind::kNotRecomputable;
  }
  if (instruction->HasSideEffect()) return ProducerKind::kNotRecomputable;
  if (!instruction->control_successors().empty()) {
    return ProducerKind::kNotRecomputable;
  }
  for (const HloComputation* called : instruction->called_computations()) {
    if (!ComputationIsPure(called)) return ProducerKind::kNotRecomputable;
  }
  if (instruction->shape().IsArray()) return ProducerKind::kArray;
  if (IsFlatTupleOfArrays(instruction->shape())) {
    return ProducerKind::kMultiOutput;
  }
  return ProducerKind::kNotRecomputable;
}

bool UsesCanTakeAClone(const HloInstruction& producer,
                       const HloInstruction& reader) {
  if (&reader != &producer && !reader.control_successors().empty()) {
    return false;
  }
  std::vector<const HloInstruction*> group = {&reader};
  for (size_t i = 0; i < group.size(); ++i) {
    for (const HloInstruction* user : group[i]->users()) {
      if (user->opcode() == HloOpcode::kBitcast) {
        if (!user->control_successors().empty()) return false;
        group.push_back(user);
      } else if (PinsWhatItReads(*user)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace remat
}  // namespace xla
