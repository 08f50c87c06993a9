#include "xla/service/remat/judging_copy.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/analysis/hlo_dataflow_analysis.h"
#include "xla/hlo/analysis/hlo_operand_index.h"
#include "xla/hlo/ir/hlo_clone_context.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/hlo_module_config.h"
#include "xla/service/hlo_value.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

// Answers for stand-in bodies from what was learnt of the real ones, and as
// the target's AliasInfo for every other instruction.
class StandInAliasInfo : public AliasInfo {
 public:
  explicit StandInAliasInfo(const AliasInfo* target) : target_(target) {}

  void Add(const HloComputation* stand_in, const FusedBodyFacts* facts) {
    facts_[stand_in] = facts;
  }

  std::optional<bool> MayAlias(const HloInstruction* operand,
                               const ShapeIndex& operand_index,
                               const HloInstruction* user,
                               const ShapeIndex& user_index) const override {
    if (const FusedBodyFacts* facts = FactsOf(*user)) {
      return facts->MayShare(user->operand_index(operand), operand_index,
                             user_index);
    }
    return target_->MayAlias(operand, operand_index, user, user_index);
  }

 protected:
  std::optional<std::vector<std::pair<HloOperandIndex, ShapeIndex>>>
  GetNonDefaultInPlaceInputOutputPairs(
      const HloInstruction* user) const override {
    if (const FusedBodyFacts* facts = FactsOf(*user)) {
      return facts->in_place_pairs();
    }
    return target_->GetInPlaceInputOutputPairs(user);
  }

 private:
  const FusedBodyFacts* FactsOf(const HloInstruction& user) const {
    if (user.opcode() != HloOpcode::kFusion) return nullptr;
    auto found = facts_.find(user.fused_instructions_computation());
    return found == facts_.end() ? nullptr : found->second;
  }

  const AliasInfo* target_;
  absl::flat_hash_map<const HloComputation*, const FusedBodyFacts*> facts_;
};

// The computations `body` calls that are not fused computations, through
// fusions nested in it too, each once, in the order its instructions call
// them.
std::vector<HloComputation*> CalledOutsideFusions(const HloComputation& body) {
  std::vector<HloComputation*> called;
  absl::flat_hash_set<const HloComputation*> seen;
  std::vector<const HloComputation*> bodies = {&body};
  while (!bodies.empty()) {
    const HloComputation* next = bodies.back();
    bodies.pop_back();
    for (const HloInstruction* instruction : next->instructions()) {
      for (HloComputation* callee : instruction->called_computations()) {
        if (!seen.insert(callee).second) continue;
        if (callee->IsFusionComputation()) {
          bodies.push_back(callee);
        } else {
          called.push_back(callee);
        }
      }
    }
  }
  return called;
}

// The computations the figure walks: from the entry, through every callee
// but fused computations.
std::vector<const HloComputation*> UnfusedComputations(
    const HloModule& module) {
  std::vector<const HloComputation*> found = {module.entry_computation()};
  absl::flat_hash_set<const HloComputation*> seen = {
      module.entry_computation()};
  for (size_t i = 0; i < found.size(); ++i) {
    for (const HloInstruction* instruction : found[i]->instructions()) {
      if (instruction->opcode() == HloOpcode::kFusion) continue;
      for (const HloComputation* callee : instruction->called_computations()) {
        if (seen.insert(callee).second) found.push_back(callee);
      }
    }
  }
  return found;
}

// The stand-in for `fusion`'s body, added to `copy`: its parameters, and a
// custom call of the fusion's shape that reads those the body reads and
// calls copies of what the body calls.
HloComputation* AddStandIn(const HloInstruction& fusion,
                           const FusedBodyFacts& facts, HloModule* copy,
                           HloCloneContext* context) {
  const HloComputation& body = *fusion.fused_instructions_computation();
  HloComputation::Builder builder(body.name());
  std::vector<HloInstruction*> read;
  for (int64_t number = 0; number < body.num_parameters(); ++number) {
    const HloInstruction* parameter = body.parameter_instruction(number);
    HloInstruction* stand_in =
        builder.AddInstruction(HloInstruction::CreateParameter(
            number, parameter->shape(), parameter->name()));
    if (facts.ReadsParameter(number)) read.push_back(stand_in);
  }
  std::vector<HloComputation*> called;
  for (HloComputation* callee : CalledOutsideFusions(body)) {
    called.push_back(copy->DeepCloneComputation(callee, context));
  }
  HloInstruction* root =
      builder.AddInstruction(HloInstruction::CreateCustomCall(
          body.root_instruction()->shape(), read, called, kStandInTarget));
  root->SetAndSanitizeName(body.root_instruction()->name());
  return copy->AddEmbeddedComputation(builder.Build(root));
}

}  // namespace

absl::StatusOr<std::unique_ptr<FusedBodyFacts>> FusedBodyFacts::Learn(
    const HloInstruction& fusion, const AliasInfo* alias_info) {
  std::unique_ptr<FusedBodyFacts> facts(new FusedBodyFacts());
  facts->alias_info_ = alias_info;
  // The probe: one parameter per operand (each slot its own), then the
  // fusion. XLA's rules then answer for the first slot of an operand as
  // they would in the module wherever the in-place pairs did not answer
  // first (they are asked first in both, and a probe's parameter is read
  // by one slot only).
  facts->probe_ = std::make_unique<HloModule>(
      absl::StrCat("probe_", fusion.name()), HloModuleConfig());
  HloComputation::Builder builder("probe");
  std::vector<HloInstruction*> parameters;
  for (int64_t number = 0; number < fusion.operand_count(); ++number) {
    parameters.push_back(builder.AddInstruction(HloInstruction::CreateParameter(
        number, fusion.operand(number)->shape(), absl::StrCat("p", number))));
  }
  HloCloneContext context(facts->probe_.get());
  facts->fusion_ = builder.AddInstruction(
      fusion.CloneWithNewOperands(fusion.shape(), parameters, &context));
  facts->probe_->AddEntryComputation(builder.Build(facts->fusion_));
  TF_ASSIGN_OR_RETURN(facts->dataflow_, HloDataflowAnalysis::Run(
                                            *facts->probe_,
                                            /*ssa_form=*/true,
                                            /*bitcast_defines_value=*/false));
  const HloComputation& body =
      *facts->fusion_->fused_instructions_computation();
  for (int64_t number = 0; number < body.num_parameters(); ++number) {
    bool reads = false;
    for (const auto& [index, values] : facts->dataflow_->GetInstructionValueSet(
             body.parameter_instruction(number))) {
      for (const HloValue* value : values.values()) {
        reads = reads || !value->GetUses().empty();
      }
    }
    facts->reads_.push_back(reads);
  }
  facts->in_place_pairs_ =
      alias_info->GetInPlaceInputOutputPairs(facts->fusion_);
  return facts;
}

bool FusedBodyFacts::MayShare(int64_t operand_number,
                              const ShapeIndex& operand_index,
                              const ShapeIndex& user_index) const {
  auto key = std::make_tuple(operand_number, operand_index, user_index);
  absl::MutexLock lock(&mu_);
  if (auto known = shares_.find(key); known != shares_.end()) {
    return known->second;
  }
  const bool answer = dataflow_->CanShareOperandBufferWithUser(
      fusion_->mutable_operand(operand_number), operand_index, fusion_,
      user_index, alias_info_);
  shares_.emplace(std::move(key), answer);
  return answer;
}

absl::StatusOr<std::vector<const FusedBodyFacts*>> FusedBodyFactsStore::FactsOf(
    absl::Span<const HloInstruction* const> fusions,
    absl::Span<const std::string> names) {
  using Slot = OnceByKey<std::unique_ptr<FusedBodyFacts>>::Slot;
  std::vector<Slot*> slots;
  for (size_t i = 0; i < fusions.size(); ++i) {
    auto [slot, claimed] = bodies_.Claim(names[i]);
    slots.push_back(slot);
    // Known, or another copier's to learn: waited for below.
    if (!claimed) continue;
    bodies_.Fill(slot, FusedBodyFacts::Learn(*fusions[i], target_.get()));
  }
  std::vector<const FusedBodyFacts*> facts;
  for (Slot* slot : slots) {
    const absl::StatusOr<std::unique_ptr<FusedBodyFacts>>& learnt =
        bodies_.Await(slot);
    if (!learnt.ok()) return learnt.status();
    facts.push_back(learnt->get());
  }
  return facts;
}

int FusedBodyFactsStore::size() const { return bodies_.size(); }

JudgingCopier::JudgingCopier(
    const AliasInfo* alias_info, JudgingCopyKind kind,
    std::function<const HloComputation*(const HloComputation*)> original_of)
    : target_(alias_info),
      kind_(kind),
      original_of_(std::move(original_of)),
      store_(std::make_shared<FusedBodyFactsStore>(alias_info)) {}

const HloComputation* JudgingCopier::OriginalBody(
    const HloInstruction& fusion) const {
  const HloComputation* body = fusion.fused_instructions_computation();
  const HloComputation* copied_from =
      original_of_ != nullptr ? original_of_(body) : nullptr;
  return copied_from != nullptr ? copied_from : body;
}

absl::Status JudgingCopier::LearnBodiesOf(
    absl::Span<const HloInstruction* const> fusions) {
  std::vector<const HloInstruction*> unknown;
  std::vector<std::string> names;
  absl::flat_hash_set<const HloComputation*> asked;
  for (const HloInstruction* fusion : fusions) {
    const HloComputation* body = OriginalBody(*fusion);
    if (known_.contains(body) || !asked.insert(body).second) continue;
    unknown.push_back(fusion);
    names.emplace_back(body->name());
  }
  if (unknown.empty()) return absl::OkStatus();
  TF_ASSIGN_OR_RETURN(std::vector<const FusedBodyFacts*> facts,
                      store_->FactsOf(unknown, names));
  for (size_t i = 0; i < unknown.size(); ++i) {
    known_[OriginalBody(*unknown[i])] = facts[i];
  }
  return absl::OkStatus();
}

absl::StatusOr<JudgingCopy> JudgingCopier::Copy(const HloModule& module) {
  if (!module.has_schedule()) {
    return absl::FailedPreconditionError(
        absl::StrCat("module ", module.name(), " has no schedule"));
  }
  JudgingCopy result;
  auto alias_info = std::make_unique<StandInAliasInfo>(target_.get());
  if (kind_ == JudgingCopyKind::kWhole) {
    // Clone("") keeps every name; with no stand-ins the AliasInfo is the
    // target's.
    result.module = module.Clone("");
    result.alias_info = std::move(alias_info);
    return result;
  }
  result.module = std::make_unique<HloModule>(module.name(), module.config());
  HloModule* copy = result.module.get();
  HloCloneContext context(copy, /*suffix=*/"");
  // One fusion of each body the figure walks past, in the order the
  // computations list them (the stand-ins' names follow it).
  std::vector<const HloInstruction*> fusions;
  absl::flat_hash_set<const HloComputation*> bodies;
  for (const HloComputation* computation : UnfusedComputations(module)) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (instruction->opcode() == HloOpcode::kFusion &&
          bodies.insert(instruction->fused_instructions_computation()).second) {
        fusions.push_back(instruction);
      }
    }
  }
  TF_RETURN_IF_ERROR(LearnBodiesOf(fusions));
  for (const HloInstruction* fusion : fusions) {
    const FusedBodyFacts* facts = known_.at(OriginalBody(*fusion));
    HloComputation* stand_in = AddStandIn(*fusion, *facts, copy, &context);
    context.MapComputation(fusion->fused_instructions_computation(), stand_in);
    alias_info->Add(stand_in, facts);
  }
  copy->AddEntryComputation(module.entry_computation()->Clone("", &context));
  copy->input_output_alias_config() = module.input_output_alias_config();
  copy->buffer_donor_config() = module.buffer_donor_config();
  HloSchedule schedule(copy);
  // As HloModule::Clone: every scheduled computation that has a copy (the
  // computations only fused bodies call are scheduled too).
  for (const HloComputation* computation : module.computations()) {
    if (!module.schedule().is_computation_scheduled(computation)) continue;
    HloComputation* scheduled = context.FindComputation(computation);
    if (scheduled == nullptr) continue;
    HloInstructionSequence& sequence = schedule.GetOrCreateSequence(scheduled);
    for (const HloInstruction* instruction :
         module.schedule().sequence(computation).instructions()) {
      HloInstruction* in_copy = context.FindInstruction(instruction);
      if (in_copy == nullptr) {
        return absl::InternalError(absl::StrCat(
            "rematerialization: the judging copy lost ", instruction->name()));
      }
      sequence.push_back(in_copy);
    }
  }
  TF_RETURN_IF_ERROR(copy->set_schedule(std::move(schedule)));
  result.alias_info = std::move(alias_info);
  return result;
}

}  // namespace remat
}  // namespace xla
