#include "xla/service/remat/remat_schedule.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "xla/hlo/analysis/alias_info.h"
#include "xla/hlo/analysis/hlo_alias_analysis.h"
#include "xla/hlo/analysis/tuple_points_to_analysis.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/hlo/transforms/simplifiers/hlo_memory_scheduler.h"
#include "xla/service/buffer_value.h"
#include "xla/service/heap_simulator/heap_simulator.h"
#include "xla/service/remat/alias_setup.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

BufferValue::SizeFunction BufferSize(const SizeFunction& size_fn) {
  return
      [size_fn](const BufferValue& buffer) { return size_fn(buffer.shape()); };
}

// Runs one of XLA's schedulers on analyses shared by all of them (they read,
// never change, the module); `peak` is the HeapSimulator's module-wide
// minimum on the result, as HeapSimulatorPeak counts it.
absl::StatusOr<HloSchedule> RunScheduler(
    const HloModule* module, RematScheduler kind, const AliasInfo* alias_info,
    const SizeFunction& size_fn, const TuplePointsToAnalysis& points_to,
    const HloAliasAnalysis& alias_analysis, int64_t* peak) {
  std::unique_ptr<ModuleSchedulerAlgorithm> algorithm;
  switch (kind) {
    case RematScheduler::kList:
      algorithm = std::make_unique<ListMemoryScheduler>(alias_info,
                                                        BufferSize(size_fn));
      break;
    case RematScheduler::kDfs:
      algorithm =
          std::make_unique<DFSMemoryScheduler>(alias_info, BufferSize(size_fn));
      break;
    case RematScheduler::kPostorder:
      algorithm =
          std::make_unique<PostOrderScheduler>(alias_info, BufferSize(size_fn));
      break;
    case RematScheduler::kDefault:
    case RematScheduler::kGiven:
      return absl::InternalError(
          "default and given schedules are resolved by the caller");
  }
  TF_ASSIGN_OR_RETURN(HloSchedule schedule,
                      algorithm->Run(module, points_to, alias_analysis,
                                     /*execution_threads=*/{}, peak));
  TF_RETURN_IF_ERROR(schedule.Verify());
  return schedule;
}

}  // namespace

absl::StatusOr<int64_t> HeapSimulatorPeak(const HloModule& module,
                                          const SizeFunction& size_fn,
                                          const AliasInfo* alias_info) {
  TF_ASSIGN_OR_RETURN(std::unique_ptr<AliasSetup> aliases,
                      AliasSetup::Run(module, alias_info));
  LogicalBuffer::SizeFunction buffer_size = [&size_fn](const BufferValue& b) {
    return size_fn(b.shape());
  };
  return HeapSimulator::MinimumMemoryForModule(
      module.schedule(), aliases->analysis(), aliases->alias_info(),
      &buffer_size);
}

absl::StatusOr<std::vector<MadeSchedule>> MakeSchedules(
    const HloModule& module, absl::Span<const RematScheduler> schedulers,
    const SizeFunction& size_fn, const AliasInfo* alias_info,
    BackgroundFrees* frees) {
  // One points-to and one alias analysis for every scheduler: the module
  // does not change between them.
  TF_ASSIGN_OR_RETURN(std::unique_ptr<TuplePointsToAnalysis> points_to,
                      TuplePointsToAnalysis::Run(&module));
  TF_ASSIGN_OR_RETURN(std::unique_ptr<AliasSetup> aliases,
                      AliasSetup::Run(module, alias_info, ScheduleNeeded::kNo));
  std::vector<MadeSchedule> made;
  for (RematScheduler scheduler : schedulers) {
    int64_t peak = 0;
    TF_ASSIGN_OR_RETURN(
        HloSchedule schedule,
        RunScheduler(&module, scheduler, aliases->alias_info(), size_fn,
                     *points_to, aliases->analysis(), &peak));
    made.push_back(MadeSchedule{scheduler, std::move(schedule), peak});
  }
  if (frees != nullptr) {
    // Their destructors read only what the analyses own, not the module.
    frees->Free(std::move(points_to));
    frees->Free(std::move(aliases));
  }
  return made;
}

absl::StatusOr<ScheduleChoice> RescheduleModule(HloModule* module,
                                                RematScheduler kind,
                                                const SizeFunction& size_fn,
                                                const AliasInfo* alias_info,
                                                BackgroundFrees* frees) {
  if (kind == RematScheduler::kGiven) {
    return absl::InternalError("the given schedule is kept by the caller");
  }
  const RematScheduler one[] = {kind};
  ScheduleChoice choice;
  TF_ASSIGN_OR_RETURN(
      choice.made,
      MakeSchedules(*module,
                    kind == RematScheduler::kDefault
                        ? absl::Span<const RematScheduler>(kMemorySchedulers)
                        : absl::Span<const RematScheduler>(one),
                    size_fn, alias_info, frees));
  const MadeSchedule* best = nullptr;
  for (const MadeSchedule& made : choice.made) {
    if (best == nullptr ||
        made.heap_sim_peak_bytes < best->heap_sim_peak_bytes) {
      best = &made;
    }
  }
  if (best == nullptr) {
    return absl::InternalError("rematerialization: no schedule was made");
  }
  choice.scheduler = std::string(SchedulerName(best->scheduler));
  choice.heap_sim_peak_bytes = best->heap_sim_peak_bytes;
  TF_RETURN_IF_ERROR(module->set_schedule(best->schedule));
  return choice;
}

}  // namespace remat
}  // namespace xla
