// The judge's copy of a planned module: each fusion calls a stand-in body
// instead of a copy of its fused computation.
//
// A plan changes the planned computation's instructions and order, never a
// fused computation, and the memory figure (memory_figure.h) allocates
// nothing inside one. Yet XLA's alias analysis defines values for every
// instruction of every computation, and fused computations are most of a
// training step's instructions (DenseNet-121 on CPU: 79,713 of 87,298):
// copying and analysing them was two thirds of each judgement.
//
// The figure reads three things of a fusion's body, each kept exactly:
//   - which operands its output must share (the in-place pairs) and may
//     share (AliasInfo::MayAlias, and XLA's own rules past it): the copy's
//     AliasInfo answers for a stand-in from the real body, through a probe
//     module that holds the fusion alone, one per body for the whole pass;
//   - whether a loop fusion reads an operand (HloOrdering skips a use that
//     reads nothing): the stand-in reads the parameters the body reads;
//   - which computations the body calls (a reduction's `to_apply`): buffer
//     assignment gives their values thread-local allocations, so the
//     stand-in calls copies of them.
// The stand-in's root is one custom call of the fusion's shape.
#ifndef XLA_SERVICE_REMAT_JUDGING_COPY_H_
#define XLA_SERVICE_REMAT_JUDGING_COPY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/analysis/hlo_dataflow_analysis.h"
#include "xla/hlo/analysis/hlo_operand_index.h"
#include "xla/hlo/ir/hlo_clone_context.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/once_by_key.h"
#include "xla/service/remat/remat_options.h"
#include "xla/service/remat/target_alias_info.h"
#include "xla/shape_util.h"

namespace xla {
namespace remat {

// The custom call at the root of every stand-in body.
inline constexpr char kStandInTarget[] = "remat$fused_body_stand_in";

// A copy of a module for the judge, with the AliasInfo its figure is taken
// with (it answers for the stand-ins, and as the target's for the rest).
struct JudgingCopy {
  std::unique_ptr<HloModule> module;
  std::unique_ptr<AliasInfo> alias_info;
};

// What the figure reads of one fused computation, learnt once from a probe:
// a module of parameters feeding a copy of a fusion that calls it.
class FusedBodyFacts {
 public:
  static absl::StatusOr<std::unique_ptr<FusedBodyFacts>> Learn(
      const HloInstruction& fusion, const AliasInfo* alias_info);

  // Whether the body reads parameter `number` (at some index).
  bool ReadsParameter(int64_t number) const { return reads_[number]; }
  const std::vector<std::pair<HloOperandIndex, ShapeIndex>>& in_place_pairs()
      const {
    return in_place_pairs_;
  }
  // XLA's answer for the fusion's operand `operand_number` (its first slot)
  // at `operand_index` sharing the output at `user_index`, where the in-place
  // pairs have not already said yes. Memoized, under a lock.
  bool MayShare(int64_t operand_number, const ShapeIndex& operand_index,
                const ShapeIndex& user_index) const;

 private:
  FusedBodyFacts() = default;

  const AliasInfo* alias_info_ = nullptr;
  std::unique_ptr<HloModule> probe_;
  std::unique_ptr<HloDataflowAnalysis> dataflow_;
  HloInstruction* fusion_ = nullptr;  // in probe_
  std::vector<bool> reads_;
  std::vector<std::pair<HloOperandIndex, ShapeIndex>> in_place_pairs_;
  // Lanes judging at once ask one body's facts.
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<std::tuple<int64_t, ShapeIndex, ShapeIndex>, bool>
      shares_ ABSL_GUARDED_BY(mu_);
};

// The facts of fused computations, by the name of the body learnt, for the
// copiers of modules cloned alike from one module (the lanes of the frontier
// search: HloModule::Clone of one module names each copy of a body the same
// way; the module cloned from names them differently, so it keeps its own).
// Learning every body was most of each lane's first judgement (DenseNet-121
// on CPU, 0.3 of 0.4 s). Thread-safe; copiers learning at once split the
// bodies between them (FactsOf).
class FusedBodyFactsStore {
 public:
  // `alias_info`: the target's (null: XLA's default).
  explicit FusedBodyFactsStore(const AliasInfo* alias_info)
      : target_(alias_info) {}

  // The facts of the body each of `fusions` calls, named by `names` (the
  // original body's, for a clone's copy), learnt from that fusion where no
  // copier learnt them: the bodies no one has claimed are learnt here, in
  // order, then those others were learning are waited for. A body's error
  // is every caller's.
  absl::StatusOr<std::vector<const FusedBodyFacts*>> FactsOf(
      absl::Span<const HloInstruction* const> fusions,
      absl::Span<const std::string> names);

  // Bodies learnt or being learnt (for tests).
  int size() const;

 private:
  TargetAliasInfo target_;
  OnceByKey<std::unique_ptr<FusedBodyFacts>> bodies_;
};

// Makes judging copies of one module as its plan changes, and keeps what
// it learnt of its fused computations between them.
class JudgingCopier {
 public:
  // `alias_info`: the target's (null: XLA's default). `original_of`: the
  // fused computation a given one is a copy of, or null (the planner's
  // fusion clones call copies of their original's body).
  JudgingCopier(
      const AliasInfo* alias_info, JudgingCopyKind kind,
      std::function<const HloComputation*(const HloComputation*)> original_of);

  // A copy of `module` with its schedule (which must name every instruction
  // of every scheduled computation), instruction names kept; its fusions
  // call stand-ins unless the kind is kWhole.
  absl::StatusOr<JudgingCopy> Copy(const HloModule& module);

  // Learns and reads the bodies' facts through `store` from now on (the
  // lanes' store, FusedBodyFactsStore says when one may be shared).
  void UseStore(std::shared_ptr<FusedBodyFactsStore> store) {
    store_ = std::move(store);
  }

  // Bodies this copier has the facts of (for tests).
  int bodies_learnt() const { return known_.size(); }

 private:
  // The fused computation `fusion`'s body is a copy of, or its body: a
  // clone's copy reads as the original does.
  const HloComputation* OriginalBody(const HloInstruction& fusion) const;
  // The facts of every fused computation `fusions` call that this copier
  // does not have yet, from the store.
  absl::Status LearnBodiesOf(absl::Span<const HloInstruction* const> fusions);

  TargetAliasInfo target_;
  JudgingCopyKind kind_;
  std::function<const HloComputation*(const HloComputation*)> original_of_;
  std::shared_ptr<FusedBodyFactsStore> store_;
  // The store's facts by this module's body.
  absl::flat_hash_map<const HloComputation*, const FusedBodyFacts*> known_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_JUDGING_COPY_H_
