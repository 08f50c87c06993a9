#include "xla/service/remat/remat_driver.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tsl/platform/cpu_info.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/hlo_verifier.h"
#include "xla/service/remat/background_frees.h"
#include "xla/service/remat/background_task.h"
#include "xla/service/remat/callee_planning.h"
#include "xla/service/remat/compact_layout.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/frontier_cache.h"
#include "xla/service/remat/invariant_stacks.h"
#include "xla/service/remat/last_reader_hoist.h"
#include "xla/service/remat/live_range_check.h"
#include "xla/service/remat/memory_figure.h"
#include "xla/service/remat/memory_floor.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/other_schedules.h"
#include "xla/service/remat/phase_clock.h"
#include "xla/service/remat/plan_frontier.h"
#include "xla/service/remat/planner_liveness.h"
#include "xla/service/remat/planner_values.h"
#include "xla/service/remat/remat_dump.h"
#include "xla/service/remat/remat_flag_table.h"
#include "xla/service/remat/remat_graph.h"
#include "xla/service/remat/remat_planner.h"
#include "xla/service/remat/remat_schedule.h"
#include "xla/service/remat/xla_baseline.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace xla {
namespace remat {
namespace {

int64_t CountInstructions(const HloModule& module) {
  int64_t count = 0;
  for (const HloComputation* computation : module.computations()) {
    count += computation->instruction_count();
  }
  return count;
}

absl::Status VerifyModule(HloModule* module) {
  HloVerifier verifier(/*layout_sensitive=*/false,
                       /*allow_mixed_precision=*/true);
  absl::Status status = verifier.Run(module).status();
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("module fails HloVerifier after rematerialization: ",
                     status.message()));
  }
  status = module->schedule().Verify();
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("schedule fails verification after rematerialization: ",
                     status.message()));
  }
  return absl::OkStatus();
}

PlannerConfig PlannerConfigFor(const RematOptions& options) {
  PlannerConfig config;
  config.target_bytes = options.memory_limit_bytes;
  config.min_candidate_bytes = options.small_node_limit_bytes();
  const RematAlgorithm a = options.algorithm;
  config.recompute = a != RematAlgorithm::kCompress;
  config.compress =
      a == RematAlgorithm::kCompress || a == RematAlgorithm::kStandardCompress;
  config.chains = a == RematAlgorithm::kPath || a == RematAlgorithm::kOptimal;
  config.siblings = a == RematAlgorithm::kPath;
  config.judging_copy = options.judging_copy;
  config.check_peak_bound = options.check_peak_bound;
  if (a == RematAlgorithm::kOptimal) {
    config.optimal = OptimalConfig();
    config.optimal->time_limit_seconds = options.optimal_seconds;
  }
  return config;
}

// True when some value of the entry computation has a smaller compact form.
bool AnyValueCompressible(const HloModule& module, const SizeFunction& size_fn,
                          int64_t min_bytes) {
  for (const HloInstruction* instruction :
       module.entry_computation()->instructions()) {
    if (size_fn(instruction->shape()) <= min_bytes) continue;
    if (CompactShape(instruction->shape(), size_fn).has_value()) return true;
  }
  return false;
}

// After copy insertion chose its copies for the incoming order, a new order
// may make two values of one buffer live at once (`clash`, from
// FindLiveRangeInterference): refuse such a result.
absl::Status RefuseBrokenSharing(absl::string_view clash,
                                 const RematOptions& options) {
  if (clash.empty()) return absl::OkStatus();
  if (options.scheduler == RematScheduler::kGiven) {
    return absl::InternalError(absl::StrCat(
        "rematerialization broke the buffer sharing copy insertion chose: ",
        clash));
  }
  const absl::string_view flag = RematFlagName(RematFlagId::kScheduler);
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, "=", SchedulerName(options.scheduler),
      " re-ordered a module whose copies were chosen for its old order: ",
      clash, ". Here (after copy insertion, as on the GPU hook) use --", flag,
      "=", SchedulerName(RematScheduler::kGiven), ", the default there"));
}

constexpr char kNothingCompact[] =
    "no value has a smaller compact form under this size function";

// Why a finished plan is not worth applying, or "" when it is: it must lower
// the platform's figure. Whether it is worth its FLOPs at the budget is the
// frontier lookup's (plan_frontier.h), which the budget alone decides.
std::string PlanRejection(int64_t start_bytes, int64_t planned_bytes) {
  if (planned_bytes >= start_bytes) {
    return absl::StrCat("the plan does not lower the simulated peak (",
                        start_bytes, " -> ", planned_bytes, " bytes)");
  }
  return "";
}

// A plan of the frontier must lower the start, and every cheaper plan, by
// this share of the start: a smaller gain is within what an allocator's
// fragmentation moves, bought with recomputation on every step; unless it
// costs at most this share of the step's FLOPs more (FrontierRules).
constexpr double kMinUsefulReduction = 0.01;
constexpr double kFlopsWithinNoise = 0.01;
// Neighbouring plans of the frontier further apart than this share of the
// step's FLOPs get a plan between them, at most kMaxStepFills of them
// (FrontierSearch::wide_step_flops).
constexpr double kWideStepShare = 0.02;
constexpr int kMaxStepFills = 4;

bool HasWhileLoop(const HloModule& module) {
  for (const HloComputation* computation : module.computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (instruction->opcode() == HloOpcode::kWhile) return true;
    }
  }
  return false;
}

// One run of the pass, phase by phase: measure the module as given,
// schedule, rewrite loop stacks, take the floor, plan (and judge), verify,
// finish the report. Phases are timed by ScopedPhase; what is measured only
// for the report runs between them.
class RematDriver {
 public:
  RematDriver(HloModule* module, const RematOptions& options,
              const SizeFunction& size_fn, const AliasInfo* alias_info)
      : module_(module),
        options_(options),
        size_fn_(size_fn),
        alias_info_(alias_info),
        by_heap_simulator_(options.memory_figure.figure ==
                           MemoryFigure::kHeapSimulator) {}

  AliasedOutputs aliased_outputs() const {
    return TrackerAliasedOutputs(options_.memory_figure.figure);
  }
  // The tracker on the module's schedule as it is now, counting as the
  // planner will.
  absl::StatusOr<ModuleMemory> TrackModule() const {
    return TrackModuleMemory(*module_, size_fn_, aliased_outputs());
  }

  absl::StatusOr<RematReport> Run() {
    report_.module = module_->name();
    report_.algorithm = std::string(AlgorithmName(options_.algorithm));
    report_.scheduler = std::string(SchedulerName(options_.scheduler));
    report_.budget_bytes = options_.memory_limit_bytes;
    if (!options_.enabled) {
      report_.note = "pass disabled";
      return report_;
    }
    TF_RETURN_IF_ERROR(CheckDumpFolder());
    report_.memory_figure = options_.memory_figure.figure;
    had_schedule_ = module_->has_schedule();
    report_.instructions_before = CountInstructions(*module_);
    // The order as given is checked while the module is measured (read, not
    // written, until the check's answer is taken).
    std::unique_ptr<BackgroundTask<std::string>> incoming_sharing =
        had_schedule_ ? StartSharingCheck() : nullptr;
    TF_RETURN_IF_ERROR(AnalyzeModuleCosts());
    if (had_schedule_) TF_RETURN_IF_ERROR(MeasureGiven());
    std::optional<std::string> nothing_to_do;
    {
      ScopedPhase check(&report_, "check");
      nothing_to_do = WhyNothingToDo();
      // When the checks lead on, their time is no phase of its own.
      if (!nothing_to_do.has_value()) check.Discard();
    }
    if (nothing_to_do.has_value()) return NothingDone(*nothing_to_do);
    TF_RETURN_IF_ERROR(CheckIncomingSharing(incoming_sharing.get()));
    TF_RETURN_IF_ERROR(Schedule());
    TF_RETURN_IF_ERROR(RewriteLoopStacks());
    TF_RETURN_IF_ERROR(HoistReaders());
    TF_RETURN_IF_ERROR(MeasureFloor());
    TF_RETURN_IF_ERROR(ExportGraph());
    if (options_.algorithm == RematAlgorithm::kXla) {
      TF_RETURN_IF_ERROR(RunXlaBaseline());
    } else {
      TF_RETURN_IF_ERROR(Plan());
    }
    TF_RETURN_IF_ERROR(Verify());
    return Finish(/*changed=*/true);
  }

 private:
  absl::Status CheckDumpFolder() const {
    if ((options_.dump_dot || options_.dump_memlog) &&
        options_.dump_dir.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", RematFlagName(RematFlagId::kDumpDot), " and --",
          RematFlagName(RematFlagId::kDumpMemlog),
          " need a dump folder: --xla_dump_to in XLA_FLAGS, or --dump-dir for "
          "hlo-remat"));
    }
    return absl::OkStatus();
  }

  // Re-scheduling keeps the instructions, so these costs serve the planner.
  // Library calls (cuDNN, cuBLAS) counted: the same FLOPs on GPU as on CPU.
  absl::Status AnalyzeModuleCosts() {
    ScopedPhase phase(&report_, "costs");
    TF_ASSIGN_OR_RETURN(costs_, AnalyzeCosts(*module_, size_fn_));
    report_.flops_before = ModuleFlops(*module_, *costs_);
    return absl::OkStatus();
  }

  // The figure the budget is judged by (memory_figure.h): HeapSimulator's
  // peak, already measured, or what BufferAssigner allocates.
  absl::StatusOr<int64_t> Allocation(const HloModule& module,
                                     int64_t heap_sim_peak) const {
    if (by_heap_simulator_) return heap_sim_peak;
    return MeasureMemory(module, size_fn_, alias_info_, options_.memory_figure);
  }

  // The module's peak as the tracker, HeapSimulator and the platform count
  // it on its current schedule; the entry's memory model is kept for the
  // dumps and the planner.
  struct Figures {
    int64_t tracker = 0;
    int64_t heap_sim = 0;
    int64_t allocation = 0;
  };
  absl::StatusOr<Figures> MeasureNow() {
    Figures figures;
    TF_ASSIGN_OR_RETURN(ModuleMemory memory, TrackModule());
    figures.tracker = memory.peak_bytes;
    entry_model_ = memory.entry;
    TF_ASSIGN_OR_RETURN(figures.heap_sim,
                        HeapSimulatorPeak(*module_, size_fn_, alias_info_));
    TF_ASSIGN_OR_RETURN(figures.allocation,
                        Allocation(*module_, figures.heap_sim));
    return figures;
  }

  // The figures of the module as given, when it has a schedule: for the
  // report and the budget check, outside the pass time.
  absl::Status MeasureGiven() {
    TF_ASSIGN_OR_RETURN(const Figures before, MeasureNow());
    report_.peak_before_bytes = before.tracker;
    report_.heap_sim_before_bytes = before.heap_sim;
    report_.allocation_before_bytes = before.allocation;
    allocation_scheduled_ = report_.allocation_before_bytes;
    ResolveRelativeBudget();
    return DumpBefore();
  }

  // A relative budget ("0.5x") becomes bytes once the memory before is known.
  void ResolveRelativeBudget() {
    if (options_.memory_limit_fraction <= 0) return;
    options_.memory_limit_bytes =
        ResolvedBudgetBytes(options_, report_.allocation_before_bytes);
    report_.budget_bytes = options_.memory_limit_bytes;
    report_.AddNote(absl::StrCat("budget ", options_.memory_limit_fraction,
                                 "x of ", report_.allocation_before_bytes,
                                 " bytes (",
                                 MemoryFigureName(report_.memory_figure), ")"));
  }

  absl::Status DumpBefore() const {
    if (!options_.dump_dot) return absl::OkStatus();
    return WriteDotGraph(
        *module_, size_fn_, *entry_model_, report_,
        DumpPath(options_.dump_dir, report_.module, "before_remat.dot"));
  }

  // Why the module is left as given, before any work; nullopt to go on.
  std::optional<std::string> WhyNothingToDo() const {
    if (had_schedule_ && options_.memory_limit_bytes > 0 &&
        report_.allocation_before_bytes <= options_.memory_limit_bytes) {
      return "peak already within the budget";
    }
    if (options_.algorithm == RematAlgorithm::kCompress && had_schedule_ &&
        !AnyValueCompressible(*module_, size_fn_,
                              options_.small_node_limit_bytes())) {
      return kNothingCompact;
    }
    return std::nullopt;
  }

  // The module stays as given: the figures after are the figures before.
  absl::StatusOr<RematReport> NothingDone(absl::string_view why) {
    TF_RETURN_IF_ERROR(MeasureFloor());
    report_.AddNote(absl::StrCat(why, ": nothing done"));
    report_.scheduler_chosen = "unchanged";
    report_.peak_scheduled_bytes = report_.peak_before_bytes;
    report_.heap_sim_scheduled_bytes = report_.heap_sim_before_bytes;
    return Finish(/*changed=*/false);
  }

  // FindLiveRangeInterference of the module as it is now, in a thread of its
  // own (null where the options leave the check off); nothing may write the
  // module until the task's answer is taken.
  std::unique_ptr<BackgroundTask<std::string>> StartSharingCheck() const {
    if (!options_.check_live_ranges) return nullptr;
    return std::make_unique<BackgroundTask<std::string>>(
        [module = module_, alias_info = alias_info_] {
          return FindLiveRangeInterference(*module, alias_info);
        });
  }

  // After copy insertion the pass must not make two values of one buffer
  // live at once. A module that comes in with such a pair cannot be held to
  // that: the check is off for it, and the report says so. (XLA's own
  // rematerialization, which the GPU compiler runs when a step outgrows the
  // card, left one in ResNet-50's step for a100_sxm_40 at batch 708.)
  //
  // The check starts with the pass, in a thread of its own, and reads the
  // module while the pass measures it (DenseNet-121's step for h100_sxm:
  // 0.1 s, under the 0.2 s of the measure); a module within its budget
  // leaves its answer unused.
  absl::Status CheckIncomingSharing(BackgroundTask<std::string>* checking) {
    if (checking == nullptr) return absl::OkStatus();
    ScopedPhase phase(&report_, "check_incoming_sharing");
    const absl::StatusOr<std::string>& checked = checking->Wait();
    TF_RETURN_IF_ERROR(checked.status());
    const std::string& clash = *checked;
    check_sharing_ = clash.empty();
    if (!check_sharing_) {
      report_.AddNote(absl::StrCat(
          "the module came with two values of one buffer live at once (", clash,
          "): the pass's check of the buffer sharing is off for it"));
    }
    return absl::OkStatus();
  }

  absl::Status Schedule() {
    {
      ScopedPhase phase(&report_, "schedule");
      if (options_.scheduler == RematScheduler::kGiven) {
        if (!had_schedule_) {
          return absl::FailedPreconditionError(
              absl::StrCat("--", RematFlagName(RematFlagId::kScheduler), "=",
                           SchedulerName(RematScheduler::kGiven),
                           " keeps the module's schedule, but module ",
                           module_->name(), " has none"));
        }
        report_.scheduler_chosen = "given";
        report_.heap_sim_scheduled_bytes = report_.heap_sim_before_bytes;
      } else {
        TF_RETURN_IF_ERROR(Reschedule());
      }
      TF_ASSIGN_OR_RETURN(ModuleMemory scheduled, TrackModule());
      report_.peak_scheduled_bytes = scheduled.peak_bytes;
      entry_model_ = scheduled.entry;
    }
    if (report_.rescheduled) {
      // (Kept as given, the schedule's figure is the one measured before.)
      TF_ASSIGN_OR_RETURN(
          allocation_scheduled_,
          Allocation(*module_, report_.heap_sim_scheduled_bytes));
    }
    if (!had_schedule_) {
      report_.peak_before_bytes = report_.peak_scheduled_bytes;
      report_.heap_sim_before_bytes = report_.heap_sim_scheduled_bytes;
      report_.allocation_before_bytes = allocation_scheduled_;
      ResolveRelativeBudget();
      TF_RETURN_IF_ERROR(DumpBefore());
    }
    return absl::OkStatus();
  }

  // The given schedule is a candidate too: a module never starts the
  // algorithm from a schedule worse than the one it came with.
  absl::Status Reschedule() {
    // Kept where it is not taken: another schedule the frontier may search
    // (other_schedules.h).
    if (had_schedule_) given_schedule_ = module_->schedule();
    TF_ASSIGN_OR_RETURN(ScheduleChoice choice,
                        RescheduleModule(module_, options_.scheduler, size_fn_,
                                         alias_info_, frees_.get()));
    report_.scheduler_chosen = choice.scheduler;
    report_.rescheduled = true;
    schedules_made_ = std::move(choice.made);
    report_.heap_sim_scheduled_bytes = choice.heap_sim_peak_bytes;
    if (given_schedule_.has_value() &&
        choice.heap_sim_peak_bytes > report_.heap_sim_before_bytes) {
      TF_RETURN_IF_ERROR(module_->set_schedule(*std::move(given_schedule_)));
      given_schedule_.reset();
      report_.rescheduled = false;
      report_.scheduler_chosen =
          absl::StrCat("given (", choice.scheduler, " was higher)");
      report_.heap_sim_scheduled_bytes = report_.heap_sim_before_bytes;
    }
    return absl::OkStatus();
  }

  // Loop stacks that hold one invariant value at every step: read the value
  // instead of storing copies of it (exact, no compute), for the algorithms
  // that trade storage for recomputation; `compress` only changes layouts and
  // XLA's own pass, the baseline, does neither. The planner starts from the
  // rewritten module: "scheduled" figures are taken again.
  absl::Status RewriteLoopStacks() {
    if (options_.algorithm == RematAlgorithm::kXla ||
        !PlannerConfigFor(options_).recompute) {
      return absl::OkStatus();
    }
    ScopedPhase phase(&report_, "loop_stacks");
    TF_ASSIGN_OR_RETURN(InvariantStacksResult stacks,
                        RemoveInvariantStacks(module_, size_fn_));
    report_.invariant_stacks_removed = stacks.stacks_removed;
    report_.invariant_stack_bytes = stacks.bytes_removed;
    if (stacks.stacks_removed == 0) return absl::OkStatus();
    // They order the program before the rewrite.
    schedules_made_.clear();
    TF_ASSIGN_OR_RETURN(report_.heap_sim_scheduled_bytes,
                        HeapSimulatorPeak(*module_, size_fn_, alias_info_));
    TF_ASSIGN_OR_RETURN(allocation_scheduled_,
                        Allocation(*module_, report_.heap_sim_scheduled_bytes));
    TF_ASSIGN_OR_RETURN(ModuleMemory rewritten, TrackModule());
    report_.peak_scheduled_bytes = rewritten.peak_bytes;
    entry_model_ = rewritten.entry;
    TF_ASSIGN_OR_RETURN(costs_, AnalyzeCosts(*module_, size_fn_));
    return absl::OkStatus();
  }

  // Last readers run early (last_reader_hoist.h) on GPU, where XLA:GPU's
  // scheduler leaves weight gradients at the end of the step, for the
  // algorithms the planner runs (XLA's own pass, the baseline, starts from
  // the schedule as given). On CPU the pass chose the lowest of XLA's
  // memory schedulers; there the greedy planner can end on either side of a
  // budget after a reorder, so the order stays. The new order is kept where the
  // tracker's peak does not rise and, after copy insertion, the buffer sharing
  // holds; the planner starts from it. The "scheduled" figures stay the
  // incoming order's: every plan is judged against the module as it came, and
  // measuring the new order would cost a buffer assignment.
  absl::Status HoistReaders() {
    if (options_.algorithm == RematAlgorithm::kXla || by_heap_simulator_) {
      return absl::OkStatus();
    }
    ScopedPhase phase(&report_, "hoist");
    const HloSchedule given = module_->schedule();
    TF_ASSIGN_OR_RETURN(const HoistResult hoist,
                        HoistLastReaders(module_, size_fn_, alias_info_));
    if (hoist.moved == 0) return absl::OkStatus();
    TF_ASSIGN_OR_RETURN(ModuleMemory hoisted, TrackModule());
    bool keep = hoisted.peak_bytes <= report_.peak_scheduled_bytes;
    if (keep && check_sharing_) {
      TF_ASSIGN_OR_RETURN(const std::string clash,
                          FindLiveRangeInterference(*module_, alias_info_));
      keep = clash.empty();
    }
    if (!keep) return module_->set_schedule(given);
    report_.hoisted = hoist.moved;
    report_.hoisted_bytes = hoist.bytes_freed;
    entry_model_ = hoisted.entry;
    return absl::OkStatus();
  }

  // The floor does not depend on the schedule, but the loop-stack rewrite
  // removes buffers: it is taken once, of the program the planner (or
  // nothing) works on. A measurement, outside the pass time.
  absl::Status MeasureFloor() {
    TF_ASSIGN_OR_RETURN(MemoryFloor floor,
                        ComputeMemoryFloor(*module_, size_fn_, alias_info_));
    report_.floor_bytes = floor.bytes;
    report_.floor_at = floor.at;
    return absl::OkStatus();
  }

  // What a solver needs to plan the same schedule; outside the pass time.
  absl::Status ExportGraph() const {
    if (options_.export_graph_path.empty()) return absl::OkStatus();
    // Where the planner would find each buffer written over: its state on
    // the same schedule, with no move made.
    const PlannerConfig config = EntryPlannerConfig();
    PlannerState state(module_, module_->entry_computation(), config, size_fn_,
                       *costs_);
    TF_RETURN_IF_ERROR(state.Init());
    TF_ASSIGN_OR_RETURN(RematGraph graph,
                        BuildRematGraph(report_.module, *entry_model_, *costs_,
                                        options_.small_node_limit_bytes(),
                                        OverwrittenAt(state.liveness())));
    graph.memory_figure = std::string(MemoryFigureName(report_.memory_figure));
    graph.module_flops = report_.flops_before;
    return WriteRematGraph(graph, options_.export_graph_path);
  }

  absl::Status RunXlaBaseline() {
    ScopedPhase phase(&report_, "xla");
    const int64_t instructions = CountInstructions(*module_);
    TF_ASSIGN_OR_RETURN(
        XlaBaselineResult result,
        RunXlaRematerialization(module_, options_.memory_limit_bytes,
                                options_.small_node_limit_bytes(), size_fn_));
    report_.instructions_added =
        std::max<int64_t>(0, CountInstructions(*module_) - instructions);
    report_.AddNote(absl::StrCat("HloRematerialization counted ",
                                 result.reported_before_bytes, " -> ",
                                 result.reported_after_bytes, " bytes"));
    return absl::OkStatus();
  }

  // The planner's tracker and the simulator may disagree (operand buffer
  // reuse, loop state): the plan is judged by the platform's figure before
  // it is applied, against the schedule it started from.
  absl::StatusOr<PlanVerdict> Judge(const HloModule& planned,
                                    const AliasInfo* alias_info) const {
    TF_ASSIGN_OR_RETURN(
        int64_t peak,
        MeasureMemory(planned, size_fn_, alias_info, options_.memory_figure));
    std::string why = PlanRejection(allocation_scheduled_, peak);
    const bool keep = why.empty();
    return PlanVerdict{keep, peak, std::move(why)};
  }

  // What makes a frontier point a plan (plan_frontier.h).
  FrontierRules Rules() const {
    FrontierRules rules;
    rules.min_useful_reduction = kMinUsefulReduction;
    rules.flops_within_noise = kFlopsWithinNoise * report_.flops_before;
    return rules;
  }

  // Aims fixed by the module alone: shares of its figure before the pass
  // (what 0.5x is a share of) below the figure the planner starts from, and
  // the floor.
  FrontierSearch Frontier() const {
    FrontierSearch search;
    search.aims =
        FrontierAims(DefaultFrontierShares(), report_.allocation_before_bytes,
                     allocation_scheduled_, report_.floor_bytes);
    search.start_peak_bytes = allocation_scheduled_;
    search.wide_step_flops = kWideStepShare * report_.flops_before;
    search.max_step_fills = kMaxStepFills;
    search.frees = frees_.get();
    search.lanes = options_.planning_threads > 0
                       ? options_.planning_threads
                       : std::min(kMaxPlanningThreads,
                                  std::max(1, tsl::port::MaxParallelism()));
    const int64_t budget = options_.memory_limit_bytes;
    const int64_t start = allocation_scheduled_;
    search.choose = [budget, start,
                     rules = Rules()](absl::Span<const FrontierPoint> points) {
      return ChooseFromFrontier(points, budget, start, rules);
    };
    return search;
  }

  void RecordFrontier(const PlannerResult& result) {
    report_.frontier = result.frontier;
    report_.frontier_chosen = result.frontier_chosen;
    report_.frontier_start_bytes = allocation_scheduled_;
    report_.frontier_usable =
        UsablePoints(result.frontier, allocation_scheduled_, Rules());
    if (!result.frontier_chosen.has_value()) {
      if (!result.frontier.empty()) {
        report_.AddNote(
            "no plan of the frontier lowers the figure by 1% or more");
      }
      return;
    }
    const FrontierPoint& chosen = result.frontier[*result.frontier_chosen];
    report_.AddNote(absl::StrCat("frontier: ", result.frontier.size(),
                                 " aims, the plan aimed at ", chosen.aim_bytes,
                                 " bytes chosen"));
    if (result.frontier_replay_missed) {
      report_.AddNote(
          "the chosen plan did not replay from its recipe and was searched "
          "for again (a bug to report)");
    }
    if (result.frontier_applied_peak != chosen.peak_bytes) {
      // The search made again did not give the same plan: a bug to report.
      report_.AddNote(absl::StrCat(
          "the chosen plan, made again, came to ", result.frontier_applied_peak,
          " bytes, not its point's ", chosen.peak_bytes));
    }
  }

  // hlo-remat --frontier: the frontier RecordFrontier put in the report.
  absl::Status WriteFrontier() const {
    if (options_.frontier_path.empty()) return absl::OkStatus();
    return WriteFrontierJson(report_, options_.frontier_path);
  }

  // The frontier cache of this module (frontier_cache.h), with the points
  // it keeps put in `search`; nullopt without a cache folder. A file that
  // cannot be read is searched past: a compile never fails on its cache.
  std::optional<FrontierCache> LoadKnownFrontier(FrontierSearch& search) {
    if (options_.frontier_cache_dir.empty()) return std::nullopt;
    FrontierCache cache(options_.frontier_cache_dir, *module_, options_);
    absl::StatusOr<std::optional<KnownFrontier>> known = cache.Load();
    if (known.ok()) {
      if (known->has_value()) {
        search.known =
            std::make_shared<const KnownFrontier>(*std::move(*known));
      }
      report_.frontier_cache = FrontierCacheUse::kSearched;
    } else {
      report_.frontier_cache = FrontierCacheUse::kUnreadable;
      report_.AddNote(absl::StrCat("frontier cache: ", known.status().message(),
                                   "; the frontier was searched"));
    }
    return cache;
  }

  // Records what the cache did, and keeps a frontier this search made.
  void KeepFrontier(const FrontierCache& cache, const PlannerResult& result) {
    if (result.frontier_source == FrontierSource::kKnown) {
      report_.frontier_cache = FrontierCacheUse::kUsed;
      report_.AddNote(absl::StrCat("frontier from ", cache.path()));
      return;
    }
    if (result.frontier_source == FrontierSource::kKnownStale) {
      report_.frontier_cache = FrontierCacheUse::kStale;
      report_.AddNote(absl::StrCat(
          "the kept frontier's chosen plan did not land on its point: "
          "searched again, and kept in place of ",
          cache.path()));
    }
    if (result.frontier_made == nullptr) {
      if (report_.frontier_schedules.size() > 1) {
        // A later compile would answer from one schedule's points alone.
        report_.AddNote("a frontier that spans schedules is not kept");
      }
      return;
    }
    const absl::Status kept = cache.Store(*result.frontier_made);
    if (!kept.ok()) {
      report_.AddNote(absl::StrCat("frontier cache: ", kept.message(),
                                   "; the frontier was not kept"));
    }
  }

  // The planner's options on the entry as this module has it: how its
  // outputs share donated parameters and the memory model of its schedule.
  PlannerConfig EntryPlannerConfig() const {
    PlannerConfig config = PlannerConfigFor(options_);
    config.aliased_outputs = aliased_outputs();
    config.read_donated_until_written = !by_heap_simulator_;
    config.entry_memory = entry_model_;
    return config;
  }

  absl::Status Plan() {
    PlannerConfig config = EntryPlannerConfig();
    config.floor_bytes = report_.floor_bytes;
    // No budget: as low as it gets, which is aiming at the floor. Aimed at
    // zero, the sweep lowers every position from the first, spends the
    // compute cap before it reaches the peak, and its clones hold operands
    // everywhere (docs/measured.md).
    if (config.target_bytes <= 0 && report_.floor_bytes > 0) {
      config.target_bytes = report_.floor_bytes;
      report_.AddNote(absl::StrCat("no budget: aimed at the floor, ",
                                   report_.floor_bytes, " bytes"));
    }
    if (options_.max_extra_flops_fraction >= 0) {
      report_.max_extra_flops =
          options_.max_extra_flops_fraction * report_.flops_before;
      config.max_extra_flops = report_.max_extra_flops;
    }
    // Every algorithm the planner runs answers its budget from the frontier
    // (plan_frontier.h); `optimal` then gives the budget itself to its
    // solver.
    config.keep_plan = [this](const HloModule& planned,
                              const AliasInfo* alias_info) {
      return Judge(planned, alias_info);
    };
    config.alias_info = alias_info_;
    if (check_sharing_) {
      // After copy insertion (the GPU hook) the plan applied must not make
      // two values of one buffer live at once: Verify() would fail the
      // compile on it. Checked of the chosen plan, not of every point.
      config.applicable =
          [this](const HloModule& planned) -> absl::StatusOr<bool> {
        TF_ASSIGN_OR_RETURN(const std::string clash,
                            FindLiveRangeInterference(planned, alias_info_));
        return clash.empty();
      };
    }
    config.frontier = Frontier();
    std::optional<FrontierCache> cache = LoadKnownFrontier(*config.frontier);
    TF_RETURN_IF_ERROR(OfferOtherSchedules(config));
    if (config.frontier->aims.empty()) {
      report_.AddNote(absl::StrCat("the schedule is at the floor (",
                                   report_.floor_bytes,
                                   " bytes): no plan can lower it"));
    }
    PlannerResult result;
    {
      ScopedPhase phase(&report_, "plan");
      TF_ASSIGN_OR_RETURN(result,
                          RunRematPlanner(module_, config, size_fn_, *costs_));
      if (result.frontier_chosen_elsewhere != nullptr) {
        TF_ASSIGN_OR_RETURN(result,
                            MakeOnOtherSchedule(config, std::move(result)));
      }
      if (other_schedules_ != nullptr) {
        result.plans_tried += other_schedules_->plans_tried();
        result.judgements += other_schedules_->judgements();
        result.judge_seconds += other_schedules_->judge_seconds();
      }
      phase.SplitOff("judge", result.judge_seconds);
    }
    if (cache.has_value()) KeepFrontier(*cache, result);
    report_.plans_tried = result.plans_tried;
    report_.sweeps_replayed = result.sweeps_replayed;
    report_.sweeps_rescored = result.sweeps_rescored;
    report_.judgements = result.judgements;
    // Loop bodies and branches aim where the entry's plan aimed, so that the
    // frontier's choice, not the budget, decides them too.
    const int64_t callee_target =
        result.frontier_chosen.has_value()
            ? result.frontier[*result.frontier_chosen].aim_bytes
            : config.target_bytes;
    RecordFrontier(result);
    TF_RETURN_IF_ERROR(WriteFrontier());
    TF_ASSIGN_OR_RETURN(
        CalleePlanResult callees,
        PlanCallees(callee_target, config.max_extra_flops, result));
    result.AddMovesOf(std::move(callees.totals));
    RecordPlan(std::move(result), callees);
    return absl::OkStatus();
  }

  // Scheduler `default` on CPU, the frontier searched, any plan applicable:
  // where the kept schedule's lowest plan stays far above the floor, the
  // other schedules' frontiers join it (other_schedules.h).
  absl::Status OfferOtherSchedules(PlannerConfig& config) {
    // (config.applicable is set where the buffer sharing is checked.)
    if (!by_heap_simulator_ || options_.scheduler != RematScheduler::kDefault ||
        config.frontier->known != nullptr || config.applicable != nullptr) {
      return absl::OkStatus();
    }
    // Every schedule is named now, before any plan (ScheduleToSearch).
    OtherSchedulesOptions others;
    // The loop-stack rewrite changed the program the given schedule orders.
    if (report_.invariant_stacks_removed == 0 && given_schedule_.has_value()) {
      others.schedules.push_back(
          {NameSchedule(*module_, *given_schedule_,
                        std::string(SchedulerName(RematScheduler::kGiven))),
           std::nullopt});
      given_schedule_.reset();
    }
    std::vector<RematScheduler> wanted;
    for (RematScheduler scheduler : kMemorySchedulers) {
      if (!report_.rescheduled ||
          SchedulerName(scheduler) != report_.scheduler_chosen) {
        wanted.push_back(scheduler);
      }
    }
    if (schedules_made_.empty()) {
      // The loop-stack rewrite changed the program: its schedules are made
      // now, of the program the planner starts from.
      TF_ASSIGN_OR_RETURN(
          schedules_made_,
          MakeSchedules(*module_, wanted, size_fn_, alias_info_, frees_.get()));
    }
    for (const MadeSchedule& made : schedules_made_) {
      if (absl::c_linear_search(wanted, made.scheduler)) {
        others.schedules.push_back(
            {NameSchedule(*module_, made.schedule,
                          std::string(SchedulerName(made.scheduler))),
             made.heap_sim_peak_bytes});
      }
    }
    schedules_made_.clear();
    others.config = config;
    others.reference_bytes = report_.allocation_before_bytes;
    others.floor_bytes = report_.floor_bytes;
    others.alias_info = alias_info_;
    other_schedules_ =
        std::make_unique<OtherSchedules>(std::move(others), size_fn_);
    config.frontier->other_schedules =
        [this](const HloModule& module, absl::Span<const FrontierPoint> points)
        -> absl::StatusOr<std::vector<std::shared_ptr<const KnownFrontier>>> {
      if (!StopsFarAboveTheFloor(points, allocation_scheduled_,
                                 report_.floor_bytes, Rules())) {
        return std::vector<std::shared_ptr<const KnownFrontier>>();
      }
      TF_ASSIGN_OR_RETURN(auto frontiers, other_schedules_->Search(module));
      report_.frontier_schedules = {report_.scheduler_chosen};
      for (int k = 1; k <= static_cast<int>(frontiers.size()); ++k) {
        report_.frontier_schedules.push_back(
            other_schedules_->schedule(k).scheduler);
      }
      return frontiers;
    };
    return absl::OkStatus();
  }

  // The point `chosen` chose lies on another schedule: the module takes that
  // schedule, and the point's plan is made from its recipe (or, should it
  // not land there, that schedule's frontier answers the budget).
  absl::StatusOr<PlannerResult> MakeOnOtherSchedule(const PlannerConfig& config,
                                                    PlannerResult chosen) {
    const int k = chosen.frontier[*chosen.frontier_chosen].schedule;
    const NamedSchedule& order = other_schedules_->schedule(k);
    TF_RETURN_IF_ERROR(ApplyNamedSchedule(order, module_));
    TF_ASSIGN_OR_RETURN(ModuleMemory memory, TrackModule());
    entry_model_ = memory.entry;
    PlannerConfig replay = config;
    replay.entry_memory = entry_model_;
    replay.frontier->aims = other_schedules_->aims(k);
    replay.frontier->known = chosen.frontier_chosen_elsewhere;
    replay.frontier->other_schedules = nullptr;
    TF_ASSIGN_OR_RETURN(PlannerResult made,
                        RunRematPlanner(module_, replay, size_fn_, *costs_));
    report_.scheduler_chosen =
        absl::StrCat(order.scheduler, " (its plans went lower than ",
                     report_.scheduler_chosen, "'s)");
    if (made.frontier_source == FrontierSource::kKnownStale) {
      report_.AddNote(absl::StrCat(
          "the plan chosen on the ", order.scheduler,
          " schedule did not land on its point there; that schedule's "
          "frontier answered (a bug to report)"));
      for (FrontierPoint& point : made.frontier) point.schedule = k;
    } else {
      made.frontier = std::move(chosen.frontier);
      made.frontier_chosen = chosen.frontier_chosen;
    }
    made.frontier_source = FrontierSource::kSearched;
    made.frontier_made = nullptr;
    made.plans_tried += chosen.plans_tried;
    made.sweeps_replayed += chosen.sweeps_replayed;
    made.judgements += chosen.judgements;
    made.judge_seconds += chosen.judge_seconds;
    return made;
  }

  // Sites still over the budget that run a loop body or a branch: plan
  // inside it, on its own schedule, with what is left of the compute cap.
  absl::StatusOr<CalleePlanResult> PlanCallees(int64_t target_bytes,
                                               double max_extra_flops,
                                               const PlannerResult& entry) {
    ScopedPhase phase(&report_, "callees");
    PlannerConfig callee_config = PlannerConfigFor(options_);
    callee_config.target_bytes = target_bytes;
    // Loop bodies and branches are planned by `path`: the solver's time
    // went to the entry computation.
    callee_config.optimal.reset();
    if (max_extra_flops >= 0) {
      callee_config.max_extra_flops =
          std::max(0.0, max_extra_flops - entry.extra_flops);
    }
    return PlanCalledComputations(module_, callee_config, size_fn_);
  }

  void RecordPlan(PlannerResult result, const CalleePlanResult& callees) {
    report_.stopped_by_flops_cap = result.flops_capped;
    report_.instructions_added = result.instructions_added;
    report_.recomputed = result.recomputed;
    report_.compressed = result.compressed;
    report_.undone = result.undone;
    report_.out_of_line = result.out_of_line;
    report_.pinned = result.pinned;
    report_.decisions = std::move(result.decisions);
    if (options_.algorithm == RematAlgorithm::kStandardCompress &&
        result.compressible == 0) {
      report_.AddNote(kNothingCompact);
    }
    if (options_.algorithm == RematAlgorithm::kOptimal) {
      report_.optimal = result.optimal;
      report_.AddNote(
          absl::StrCat("optimal: ", OptimalOutcomeName(result.optimal.outcome),
                       " (", result.optimal.solver, ", ", result.optimal.status,
                       ", ", absl::SixDigits(result.optimal.seconds), " s)"));
    }
    if (options_.algorithm == RematAlgorithm::kPath ||
        (options_.algorithm == RematAlgorithm::kOptimal &&
         result.optimal.outcome != OptimalOutcome::kSolverPlanKept)) {
      report_.AddNote(
          absl::StrCat(result.articulation_points, " articulation points"));
    }
    if (result.plan_rejected) {
      report_.AddNote(absl::StrCat(result.rejection, ": plan taken back"));
    }
    if (callees.computations_planned > 0) {
      report_.AddNote(absl::StrCat(callees.computations_planned,
                                   " called computation(s) planned, ",
                                   callees.deepest_level, " level(s) deep"));
      if (options_.algorithm == RematAlgorithm::kOptimal) {
        report_.AddNote(
            "optimal: loop bodies and branches were planned by path; the "
            "solver ran on the entry computation only");
      }
    }
  }

  // HloVerifier and the check of the buffer sharing both read the module
  // as planned, each in a thread (DenseNet-121's step for h100_sxm: 0.06 and
  // 0.12 s).
  absl::Status Verify() {
    std::unique_ptr<BackgroundTask<std::string>> checking_sharing =
        check_sharing_ ? StartSharingCheck() : nullptr;
    {
      ScopedPhase phase(&report_, "verify");
      TF_RETURN_IF_ERROR(VerifyModule(module_));
    }
    if (checking_sharing == nullptr) return absl::OkStatus();
    ScopedPhase phase(&report_, "check_live_ranges");
    const absl::StatusOr<std::string>& clash = checking_sharing->Wait();
    absl::Status checked =
        clash.ok() ? RefuseBrokenSharing(*clash, options_) : clash.status();
    if (!checked.ok() && !options_.dump_dir.empty()) {
      // The refused module is the evidence a bug report needs.
      TF_RETURN_IF_ERROR(WriteModuleText(
          *module_, DumpPath(options_.dump_dir, report_.module,
                             "refused_by_live_range_check.txt")));
    }
    return checked;
  }

  // HeapSimulator's module-wide minimum allocates a loop-state buffer again
  // for the condition's and the body's parameters; the tracker, like buffer
  // assignment, counts it once. A miss only the simulator sees is that.
  bool HadLoopStateOvercount() const {
    return by_heap_simulator_ && options_.memory_limit_bytes > 0 &&
           report_.peak_after_bytes <= options_.memory_limit_bytes &&
           HasWhileLoop(*module_);
  }

  // The pass has ended: measures what it did for the report, notes why a
  // budget was missed, writes the dumps.
  absl::StatusOr<RematReport> Finish(bool changed) {
    report_.pass_seconds = 0;
    for (const auto& [phase, seconds] : report_.phase_seconds) {
      report_.pass_seconds += seconds;
    }
    TF_RETURN_IF_ERROR(MeasureAfter(changed));
    report_.instructions_after = CountInstructions(*module_);
    report_.budget_met =
        options_.memory_limit_bytes == 0 ||
        report_.allocation_after_bytes <= options_.memory_limit_bytes;
    if (!report_.budget_met && report_.stopped_by_flops_cap) {
      report_.AddNote(absl::StrCat(
          "the compute cap (--", RematFlagName(RematFlagId::kMaxExtraFlops),
          "=", options_.max_extra_flops_fraction,
          " of the module's FLOPs), not the budget, stopped the plan"));
    }
    if (!report_.budget_met && HadLoopStateOvercount()) {
      // The planner sees the budget met: nothing in the entry to move.
      report_.AddNote(absl::StrCat(
          "the tracker counts ", report_.peak_after_bytes,
          " bytes, within the budget; HeapSimulator counts loop state once per "
          "computation naming it (while, condition, body): see hlo-remat "
          "--explain-peak"));
    }
    TF_RETURN_IF_ERROR(DumpAfter());
    return report_;
  }

  absl::Status MeasureAfter(bool changed) {
    if (!changed) {
      report_.peak_after_bytes = report_.peak_before_bytes;
      report_.heap_sim_after_bytes = report_.heap_sim_before_bytes;
      report_.allocation_after_bytes = report_.allocation_before_bytes;
      report_.flops_after = report_.flops_before;
      return absl::OkStatus();
    }
    TF_ASSIGN_OR_RETURN(const Figures after, MeasureNow());
    report_.peak_after_bytes = after.tracker;
    report_.heap_sim_after_bytes = after.heap_sim;
    report_.allocation_after_bytes = after.allocation;
    TF_ASSIGN_OR_RETURN(std::unique_ptr<RematCostAnalysis> costs_after,
                        AnalyzeCosts(*module_, size_fn_));
    report_.flops_after = ModuleFlops(*module_, *costs_after);
    return absl::OkStatus();
  }

  absl::Status DumpAfter() const {
    if (options_.dump_dot) {
      TF_RETURN_IF_ERROR(WriteDotGraph(
          *module_, size_fn_, *entry_model_, report_,
          DumpPath(options_.dump_dir, report_.module, "after_remat.dot")));
    }
    if (options_.dump_memlog) {
      TF_RETURN_IF_ERROR(WriteMemoryLog(
          *module_, *entry_model_, report_,
          DumpPath(options_.dump_dir, report_.module, "remat_memlog.txt")));
    }
    return absl::OkStatus();
  }

  // The frontier search's copies of the module and the schedulers'
  // analyses, freed in threads of their own while the pass goes on; the
  // driver waits for them when it is destroyed, at the pass's end.
  std::unique_ptr<BackgroundFrees> frees_ = std::make_unique<BackgroundFrees>();
  HloModule* const module_;
  RematOptions options_;  // the budget in bytes once a relative one resolves
  const SizeFunction& size_fn_;
  const AliasInfo* const alias_info_;  // not owned; may be null
  const bool by_heap_simulator_;
  RematReport report_;
  bool had_schedule_ = false;
  // Plans and the result are checked to keep copy insertion's buffer
  // sharing (after copy insertion, on a module that kept it coming in).
  bool check_sharing_ = false;
  std::unique_ptr<RematCostAnalysis> costs_;
  // The entry's memory model on the module's current schedule, built once
  // per schedule for the report's figures, the dumps and the planner.
  std::shared_ptr<const ComputationMemory> entry_model_;
  // Of the schedule the planner starts from: a plan must go below it.
  int64_t allocation_scheduled_ = 0;
  // The module's own schedule where another was kept, and the searches of
  // the schedules not kept (other_schedules.h).
  std::optional<HloSchedule> given_schedule_;
  // The schedules the schedulers made of the module before any plan, the
  // kept one's too; cleared where the loop-stack rewrite changed it.
  std::vector<MadeSchedule> schedules_made_;
  std::unique_ptr<OtherSchedules> other_schedules_;
};

}  // namespace

absl::StatusOr<RematReport> RunRemat(HloModule* module,
                                     const RematOptions& options,
                                     const SizeFunction& size_fn,
                                     const AliasInfo* alias_info) {
  return RematDriver(module, options, size_fn, alias_info).Run();
}

}  // namespace remat
}  // namespace xla
