#include "xla/service/remat/invariant_stacks.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "xla/comparison_util.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/transforms/simplifiers/hlo_dce.h"
#include "xla/hlo/transforms/simplifiers/tuple_simplifier.h"
#include "xla/service/while_loop_simplifier.h"
#include "xla/service/while_util.h"
#include "xla/shape.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

const HloInstruction* StripCopies(const HloInstruction* instruction) {
  while (instruction->opcode() == HloOpcode::kCopy) {
    instruction = instruction->operand(0);
  }
  return instruction;
}

// True for a get-tuple-element(`tuple`) of `index`.
bool IsElement(const HloInstruction* instruction, const HloInstruction* tuple,
               int64_t index) {
  return instruction->opcode() == HloOpcode::kGetTupleElement &&
         instruction->operand(0) == tuple &&
         instruction->tuple_index() == index;
}

std::vector<HloInstruction*> Elements(HloInstruction* tuple, int64_t index) {
  std::vector<HloInstruction*> out;
  for (HloInstruction* user : tuple->users()) {
    if (IsElement(user, tuple, index)) out.push_back(user);
  }
  return out;
}

std::optional<int64_t> IntegerConstant(const HloInstruction* instruction) {
  instruction = StripCopies(instruction);
  if (instruction->opcode() != HloOpcode::kConstant ||
      !ShapeUtil::IsEffectiveScalar(instruction->shape())) {
    return std::nullopt;
  }
  return instruction->literal().GetFirstInteger();
}

// What `instruction` computes, looking through a fusion that wraps a single
// instruction (XLA:CPU wraps lone ops so): that instruction, with its
// operands as the values outside the fusion (constants inside stay).
struct Op {
  const HloInstruction* inner = nullptr;
  std::vector<const HloInstruction*> operands;
};

std::optional<Op> Unwrapped(const HloInstruction* instruction) {
  if (instruction->opcode() != HloOpcode::kFusion) {
    Op op{instruction, {}};
    for (const HloInstruction* operand : instruction->operands()) {
      op.operands.push_back(operand);
    }
    return op;
  }
  Op op{instruction->fused_expression_root(), {}};
  for (const HloInstruction* operand : op.inner->operands()) {
    if (operand->opcode() == HloOpcode::kParameter) {
      op.operands.push_back(instruction->operand(operand->parameter_number()));
    } else if (operand->opcode() == HloOpcode::kConstant) {
      op.operands.push_back(operand);
    } else {
      return std::nullopt;
    }
  }
  return op;
}

// When `row` is the counter of a loop `for (i = 0; i < N; ++i)` read at the
// start of the body, returns N: the body then runs once for each row value.
std::optional<int64_t> CountedRows(const HloInstruction* loop,
                                   const HloInstruction* row) {
  const HloComputation* body = loop->while_body();
  const HloInstruction* param = body->parameter_instruction(0);
  row = StripCopies(row);
  if (row->opcode() != HloOpcode::kGetTupleElement ||
      row->operand(0) != param) {
    return std::nullopt;
  }
  const int64_t c = row->tuple_index();
  // ++i: the body's root element c is i + 1.
  std::optional<Op> next = Unwrapped(body->root_instruction()->operand(c));
  if (!next || next->inner->opcode() != HloOpcode::kAdd) return std::nullopt;
  const bool counter_first =
      IsElement(StripCopies(next->operands[0]), param, c);
  const HloInstruction* step = next->operands[counter_first ? 1 : 0];
  if (!IsElement(StripCopies(next->operands[counter_first ? 0 : 1]), param,
                 c) ||
      IntegerConstant(step) != 1) {
    return std::nullopt;
  }
  // i = 0.
  const HloInstruction* init = loop->operand(0);
  if (init->opcode() != HloOpcode::kTuple ||
      IntegerConstant(init->operand(c)) != 0) {
    return std::nullopt;
  }
  // i < N.
  const HloComputation* condition = loop->while_condition();
  std::optional<Op> compare = Unwrapped(condition->root_instruction());
  if (!compare || compare->inner->opcode() != HloOpcode::kCompare ||
      compare->inner->comparison_direction() != ComparisonDirection::kLt ||
      !IsElement(StripCopies(compare->operands[0]),
                 condition->parameter_instruction(0), c)) {
    return std::nullopt;
  }
  return IntegerConstant(compare->operands[1]);
}

bool IsZeroConstant(const HloInstruction* instruction) {
  return instruction->opcode() == HloOpcode::kConstant &&
         ShapeUtil::IsEffectiveScalar(instruction->shape()) &&
         instruction->literal().IsZero({});
}

// `reshaped` is `value` with a leading dimension of 1, or the reverse, by a
// reshape or by a bitcast that is one: the logical values agree.
bool IsUnitReshape(const HloInstruction* reshaped) {
  if (reshaped->opcode() == HloOpcode::kReshape) return true;
  return reshaped->opcode() == HloOpcode::kBitcast &&
         ShapeUtil::ReshapeIsBitcast(reshaped->operand(0)->shape(),
                                     reshaped->shape());
}

// One row of a stack of `value_shape` rows: [1, value dims...].
bool IsRowOf(const Shape& row, const Shape& stack, const Shape& value_shape) {
  if (!row.IsArray() || row.dimensions().size() != stack.dimensions().size() ||
      row.dimensions(0) != 1) {
    return false;
  }
  for (int64_t d = 1; d < row.dimensions().size(); ++d) {
    if (row.dimensions(d) != stack.dimensions(d)) return false;
  }
  return ShapeUtil::ElementsIn(row) == ShapeUtil::ElementsIn(value_shape);
}

// A push: the forward body's root element `stack_index` is
// dynamic-update-slice(stack, unit-reshape(value), row, 0, ...), plain or as
// a fusion's root.
struct Push {
  const HloInstruction* value = nullptr;  // in the forward body
  const HloInstruction* row = nullptr;    // the row index, in the body
};

std::optional<Push> MatchPush(const HloInstruction* push,
                              const HloInstruction* stack_element) {
  const HloInstruction* dus = push;
  auto outer = [&](const HloInstruction* inner) -> const HloInstruction* {
    if (push->opcode() != HloOpcode::kFusion) return inner;
    if (inner->opcode() != HloOpcode::kParameter) return nullptr;
    return push->operand(inner->parameter_number());
  };
  if (push->opcode() == HloOpcode::kFusion) {
    dus = push->fused_expression_root();
  }
  if (dus->opcode() != HloOpcode::kDynamicUpdateSlice) return std::nullopt;
  if (outer(dus->operand(0)) != stack_element) return std::nullopt;
  const HloInstruction* update = dus->operand(1);
  if (!IsUnitReshape(update) ||
      !IsRowOf(update->shape(), dus->shape(), update->operand(0)->shape())) {
    return std::nullopt;
  }
  for (int64_t i = 3; i < dus->operand_count(); ++i) {
    if (!IsZeroConstant(dus->operand(i))) return std::nullopt;
  }
  Push found{outer(update->operand(0)), outer(dus->operand(2))};
  if (found.value == nullptr || found.row == nullptr) return std::nullopt;
  return found;
}

// Inside `fusion`, the parameter `stack_element` enters as, when it enters
// once and feeds one instruction there; else null.
const HloInstruction* FusedStackParameter(const HloInstruction* fusion,
                                          const HloInstruction* stack_element) {
  if (fusion->OperandIndices(stack_element).size() != 1) return nullptr;
  const HloInstruction* parameter =
      fusion->fused_parameter(fusion->operand_index(stack_element));
  return parameter->user_count() == 1 ? parameter : nullptr;
}

// One row of the stack: dynamic-slice(stack, row, 0, ...) with the row's
// shape, plain or as the root of a fusion whose one stack parameter feeds
// only it (XLA:GPU fuses the pop so, the row index computed inside). Every
// row holds the value, so which row is read does not matter.
bool IsRowSlice(const HloInstruction* slice,
                const HloInstruction* stack_element, const Shape& value_shape) {
  const HloInstruction* root = slice;
  const HloInstruction* stack = stack_element;
  if (slice->opcode() == HloOpcode::kFusion) {
    root = slice->fused_expression_root();
    stack = FusedStackParameter(slice, stack_element);
    if (stack == nullptr) return false;
  }
  if (root->opcode() != HloOpcode::kDynamicSlice || root->operand(0) != stack ||
      !IsRowOf(root->shape(), stack->shape(), value_shape)) {
    return false;
  }
  for (int64_t i = 2; i < root->operand_count(); ++i) {
    if (!IsZeroConstant(root->operand(i))) return false;
  }
  return true;
}

// A read: bitcast/reshape of a row slice to the value's dimensions; or a
// fusion that does both (XLA:CPU's form), its one stack parameter feeding
// only the slice.
bool IsRead(const HloInstruction* read, const HloInstruction* stack_element,
            const Shape& value_shape) {
  if (!ShapeUtil::SameDimensions(read->shape(), value_shape)) return false;
  if (read->opcode() != HloOpcode::kFusion) {
    return IsUnitReshape(read) &&
           IsRowSlice(read->operand(0), stack_element, value_shape);
  }
  const HloInstruction* root = read->fused_expression_root();
  const HloInstruction* stack = FusedStackParameter(read, stack_element);
  return stack != nullptr && IsUnitReshape(root) &&
         IsRowSlice(root->operand(0), stack, value_shape);
}

// The reads of the backward loop's element `index`, or nullopt when the
// element has any other use (it must be passed through unchanged and be
// unused after the loop).
std::optional<std::vector<HloInstruction*>> FindReads(
    HloInstruction* loop, int64_t index, const Shape& value_shape) {
  HloComputation* body = loop->while_body();
  HloInstruction* param = body->parameter_instruction(0);
  HloInstruction* root = body->root_instruction();
  if (root->opcode() != HloOpcode::kTuple ||
      !IsElement(root->operand(index), param, index) ||
      !Elements(loop, index).empty()) {
    return std::nullopt;
  }
  std::vector<HloInstruction*> reads;
  for (HloInstruction* element : Elements(param, index)) {
    for (HloInstruction* user : element->users()) {
      if (user == root) {
        const auto at = root->OperandIndices(element);
        if (at.size() != 1 || at[0] != index) {
          return std::nullopt;
        }
        continue;
      }
      if (IsRowSlice(user, element, value_shape)) {
        // A slice without its reshape (plain, or fused as on GPU): every
        // user of it must complete a read.
        for (HloInstruction* reshaped : user->users()) {
          if (!IsRead(reshaped, element, value_shape)) return std::nullopt;
          reads.push_back(reshaped);
        }
        continue;
      }
      if (!IsRead(user, element, value_shape)) return std::nullopt;
      reads.push_back(user);
    }
  }
  if (reads.empty()) return std::nullopt;
  return reads;
}

// A stack built by `forward` in element `stack_index` and read by the loop
// after it, and the invariant value every row holds.
struct StackPair {
  HloInstruction* forward = nullptr;
  int64_t value_index = 0;  // forward element the pushed value comes from
  Shape value_shape;
  HloInstruction* backward = nullptr;
  int64_t backward_index = 0;
  int64_t stack_bytes = 0;
};

// Proves that every row of the forward loop's element `k` is the same
// invariant value: the pushed value is (a copy of) an element passed through
// unchanged, and the row index is the loop's counter running over 0..N-1
// for a stack of N rows.
std::optional<StackPair> MatchStack(HloInstruction* forward, int64_t k,
                                    const SizeFunction& size_fn) {
  HloComputation* body = forward->while_body();
  const HloInstruction* param = body->parameter_instruction(0);
  const HloInstruction* root = body->root_instruction();
  const Shape& stack_shape = root->operand(k)->shape();
  if (!stack_shape.IsArray() || stack_shape.dimensions().size() < 2) {
    return std::nullopt;
  }
  std::vector<HloInstruction*> stack_elements =
      Elements(body->parameter_instruction(0), k);
  if (stack_elements.size() != 1 || stack_elements[0]->user_count() != 1) {
    return std::nullopt;
  }
  std::optional<Push> push = MatchPush(root->operand(k), stack_elements[0]);
  if (!push.has_value()) return std::nullopt;
  const HloInstruction* source = StripCopies(push->value);
  if (source->opcode() != HloOpcode::kGetTupleElement ||
      source->operand(0) != param ||
      !IsElement(root->operand(source->tuple_index()), param,
                 source->tuple_index())) {
    return std::nullopt;
  }
  if (CountedRows(forward, push->row) != stack_shape.dimensions(0)) {
    return std::nullopt;
  }
  // The stack leaves the loop only into the init tuple of the next loop.
  HloInstruction* init = nullptr;
  int64_t backward_index = -1;
  for (HloInstruction* out : Elements(forward, k)) {
    for (HloInstruction* user : out->users()) {
      HloInstruction* via = user;
      if (via->opcode() == HloOpcode::kCopy && via->user_count() == 1) {
        via = via->users()[0];
      }
      const auto at = via->OperandIndices(user == via ? out : user);
      if (via->opcode() != HloOpcode::kTuple || at.size() != 1 ||
          (init != nullptr && (init != via || backward_index != at[0]))) {
        return std::nullopt;
      }
      init = via;
      backward_index = at[0];
    }
  }
  if (init == nullptr || init->user_count() != 1 ||
      init->users()[0]->opcode() != HloOpcode::kWhile) {
    return std::nullopt;
  }
  StackPair pair;
  pair.forward = forward;
  pair.value_index = source->tuple_index();
  pair.value_shape = push->value->shape();
  pair.backward = init->users()[0];
  pair.backward_index = backward_index;
  pair.stack_bytes = size_fn(stack_shape);
  if (!FindReads(pair.backward, backward_index, pair.value_shape)) {
    return std::nullopt;
  }
  return pair;
}

// A stack found by MatchStack, with the forward element it occupies.
struct FoundStack {
  StackPair pair;
  int64_t stack_index = 0;
  // The value, copied once right after the forward loop: a buffer of its
  // own, so no aliasing chosen earlier is touched. Made before any loop is
  // rebuilt, as a backward loop may be another stack's forward loop.
  HloInstruction* value = nullptr;
};

void CopyValueOut(FoundStack& found) {
  HloComputation* entry = found.pair.forward->parent();
  HloInstruction* element =
      entry->AddInstruction(HloInstruction::CreateGetTupleElement(
          found.pair.forward, found.pair.value_index));
  found.value = entry->AddInstruction(HloInstruction::CreateUnary(
      found.pair.value_shape, HloOpcode::kCopy, element));
}

// XLA's DCE keeps an instruction that has control edges (XLA:GPU's
// scheduling leaves them on pushes and reads), and a dead push or read kept
// so would keep its stack alive: hands its edges on and removes it.
absl::Status RemoveIfDead(HloInstruction* instruction) {
  if (instruction->user_count() != 0 ||
      instruction == instruction->parent()->root_instruction()) {
    return absl::OkStatus();
  }
  TF_RETURN_IF_ERROR(instruction->SafelyDropAllControlDependencies());
  return instruction->parent()->RemoveInstruction(instruction);
}

// The forward loop now passes the stack through untouched: the push dies.
absl::Status StopPushing(const FoundStack& found) {
  HloComputation* body = found.pair.forward->while_body();
  HloInstruction* root = body->root_instruction();
  HloInstruction* push = root->mutable_operand(found.stack_index);
  HloInstruction* passed =
      body->AddInstruction(HloInstruction::CreateGetTupleElement(
          body->parameter_instruction(0), found.stack_index));
  TF_RETURN_IF_ERROR(root->ReplaceOperandWith(found.stack_index, passed));
  return RemoveIfDead(push);
}

// Makes `backward` read each stack's value instead of its rows. Every value
// is threaded in one rebuild of the loop: a second rebuild would leave the
// first one's init tuple between the other stacks and the loop.
absl::Status ReadValuesInstead(HloInstruction* backward,
                               const std::vector<const FoundStack*>& stacks) {
  std::vector<HloInstruction*> values;
  std::vector<std::vector<HloInstruction*>> reads;
  for (const FoundStack* stack : stacks) {
    values.push_back(stack->value);
    std::optional<std::vector<HloInstruction*>> found = FindReads(
        backward, stack->pair.backward_index, stack->pair.value_shape);
    if (!found.has_value()) {
      return absl::InternalError("the matched stack reads are gone");
    }
    reads.push_back(*std::move(found));
  }
  // Threading the values rebuilds the loop's body around a copy of the old
  // one; the map says where each read went.
  TF_ASSIGN_OR_RETURN(WhileUtil::MakeInstructionsLiveInResult live_in,
                      WhileUtil::MakeInstructionsLiveIn(backward, values));
  for (size_t i = 0; i < stacks.size(); ++i) {
    HloInstruction* in_body = live_in.while_body_live_in_values[i];
    HloComputation* body = in_body->parent();
    for (HloInstruction* old_read : reads[i]) {
      auto moved = live_in.while_body_instruction_map.find(old_read);
      if (moved == live_in.while_body_instruction_map.end()) {
        return absl::InternalError("a stack read was lost threading the value");
      }
      HloInstruction* read = moved->second;
      HloInstruction* replacement = in_body;
      if (!ShapeUtil::Equal(read->shape(), in_body->shape())) {
        // Same dimensions, another layout.
        replacement = body->AddInstruction(HloInstruction::CreateUnary(
            read->shape(), HloOpcode::kCopy, in_body));
      }
      TF_RETURN_IF_ERROR(read->ReplaceAllUsesWith(replacement));
      // A plain read is a reshape of the row slice, which dies with its
      // last read; a fused read holds its slice inside.
      HloInstruction* slice = read->opcode() == HloOpcode::kFusion
                                  ? nullptr
                                  : read->mutable_operand(0);
      TF_RETURN_IF_ERROR(RemoveIfDead(read));
      if (slice != nullptr) TF_RETURN_IF_ERROR(RemoveIfDead(slice));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<InvariantStacksResult> RemoveInvariantStacks(
    HloModule* module, const SizeFunction& size_fn) {
  InvariantStacksResult result;
  // Match everything on the unchanged module first, then rewrite: the
  // forward bodies stop pushing, and each backward loop is rebuilt once.
  std::vector<FoundStack> found;
  std::vector<HloInstruction*> backward_loops;
  for (HloInstruction* loop :
       module->entry_computation()->MakeInstructionPostOrder()) {
    if (loop->opcode() != HloOpcode::kWhile ||
        loop->while_body()->root_instruction()->opcode() != HloOpcode::kTuple) {
      continue;
    }
    const int64_t elements = loop->shape().tuple_shapes().size();
    for (int64_t k = 0; k < elements; ++k) {
      std::optional<StackPair> pair = MatchStack(loop, k, size_fn);
      if (!pair.has_value()) continue;
      if (std::find(backward_loops.begin(), backward_loops.end(),
                    pair->backward) == backward_loops.end()) {
        backward_loops.push_back(pair->backward);
      }
      found.push_back({*std::move(pair), k});
    }
  }
  for (FoundStack& stack : found) CopyValueOut(stack);
  for (const FoundStack& stack : found) {
    TF_RETURN_IF_ERROR(StopPushing(stack));
    ++result.stacks_removed;
    result.bytes_removed += stack.pair.stack_bytes;
  }
  for (HloInstruction* backward : backward_loops) {
    std::vector<const FoundStack*> stacks;
    for (const FoundStack& stack : found) {
      if (stack.pair.backward == backward) stacks.push_back(&stack);
    }
    TF_RETURN_IF_ERROR(ReadValuesInstead(backward, stacks));
  }
  if (result.stacks_removed == 0) return result;
  // Drop the pushes, reads and now dead loop slots.
  TF_RETURN_IF_ERROR(HloDCE().Run(module).status());
  // The rebuilt loops' roots are tuples of tuple elements: fold them so the
  // dead slots show as passed through.
  TF_RETURN_IF_ERROR(TupleSimplifier().Run(module).status());
  TF_RETURN_IF_ERROR(WhileLoopSimplifier().Run(module).status());
  // It leaves tuples of the old loop states behind, which keep the stacks'
  // initial values alive until folded away.
  TF_RETURN_IF_ERROR(TupleSimplifier().Run(module).status());
  TF_RETURN_IF_ERROR(HloDCE().Run(module).status());
  if (module->has_schedule()) {
    TF_RETURN_IF_ERROR(module->schedule().Update());
  }
  return result;
}

}  // namespace remat
}  // namespace xla
