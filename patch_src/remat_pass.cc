#include "xla/service/remat/remat_pass.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/log/log.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/hlo/ir/hlo_computation.h"
#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/ir/hlo_schedule.h"
#include "xla/service/hlo_cost_analysis.h"
#include "xla/service/hlo_verifier.h"
#include "xla/service/remat/callee_planning.h"
#include "xla/service/remat/compact_layout.h"
#include "xla/service/remat/cost_model.h"
#include "xla/service/remat/invariant_stacks.h"
#include "xla/service/remat/live_range_check.h"
#include "xla/service/remat/memory_figure.h"
#include "xla/service/remat/memory_floor.h"
#include "xla/service/remat/memory_tracker.h"
#include "xla/service/remat/remat_dump.h"
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
  int64_t n = 0;
  for (const HloComputation* c : module.computations()) {
    n += c->instruction_count();
  }
  return n;
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
  config.chains = a == RematAlgorithm::kPath;
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
// may make two values of one buffer live at once: refuse such a result.
absl::Status CheckLiveRanges(const HloModule& module,
                             const RematOptions& options,
                             const AliasInfo* alias_info) {
  TF_ASSIGN_OR_RETURN(std::string clash,
                      FindLiveRangeInterference(module, alias_info));
  if (clash.empty()) return absl::OkStatus();
  if (options.scheduler == RematScheduler::kGiven) {
    return absl::InternalError(absl::StrCat(
        "rematerialization broke the buffer sharing copy insertion chose: ",
        clash));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--xla_rematerialization_scheduler=", SchedulerName(options.scheduler),
      " re-ordered a module whose copies were chosen for its old order: ",
      clash,
      ". Here (after copy insertion, as on the GPU hook) use "
      "--xla_rematerialization_scheduler=given, the default there"));
}

constexpr char kNothingCompact[] =
    "no value has a smaller compact form under this size function";

// Why a finished plan is not worth applying, or "" when it is. A plan must
// lower the simulated peak; one that still misses the budget must lower it
// by at least kMinUsefulReduction of the start: the model does not fit
// either way, and a smaller gain is within what an allocator's fragmentation
// moves, bought with recomputation on every step.
constexpr double kMinUsefulReduction = 0.01;

std::string PlanRejection(int64_t start_bytes, int64_t planned_bytes,
                          int64_t budget_bytes) {
  if (planned_bytes >= start_bytes) {
    return absl::StrCat("the plan does not lower the simulated peak (",
                        start_bytes, " -> ", planned_bytes, " bytes)");
  }
  const bool missed = budget_bytes > 0 && planned_bytes > budget_bytes;
  if (missed && static_cast<double>(start_bytes - planned_bytes) <
                    kMinUsefulReduction * static_cast<double>(start_bytes)) {
    return absl::StrCat(
        "the plan misses the budget and lowers the simulated "
        "peak by less than 1% (",
        start_bytes, " -> ", planned_bytes, " bytes)");
  }
  return "";
}

bool HasWhileLoop(const HloModule& module) {
  for (const HloComputation* computation : module.computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (instruction->opcode() == HloOpcode::kWhile) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<RematReport> RunRemat(HloModule* module,
                                     const RematOptions& given_options,
                                     const SizeFunction& size_fn,
                                     const AliasInfo* alias_info) {
  // A relative budget ("0.5x") becomes bytes once the memory before is known.
  RematOptions options = given_options;
  RematReport report;
  report.module = module->name();
  report.algorithm = std::string(AlgorithmName(options.algorithm));
  report.scheduler = std::string(SchedulerName(options.scheduler));
  report.budget_bytes = options.memory_limit_bytes;
  if (!options.enabled) {
    report.note = "pass disabled";
    return report;
  }
  const bool dumping = options.dump_dot || options.dump_memlog;
  if (dumping && options.dump_dir.empty()) {
    return absl::InvalidArgumentError(
        "--xla_rematerialization_dump_dot and "
        "--xla_rematerialization_dump_memlog "
        "need a dump folder: --xla_dump_to in XLA_FLAGS, or --dump-dir for "
        "hlo-remat");
  }
  // The entry's memory model on the module's current schedule, built once
  // for the report's figures, the dumps and the planner.
  std::shared_ptr<const ComputationMemory> entry_model;
  auto dump_before = [&]() -> absl::Status {
    if (!options.dump_dot) return absl::OkStatus();
    return WriteDotGraph(
        *module, size_fn, *entry_model, report,
        DumpPath(options.dump_dir, report.module, "before_remat.dot"));
  };
  // Time of one phase of the pass, for the report's phase_seconds; the
  // pass time is their sum. Measurements for the report and dumps run
  // between phases and restart the clock after them.
  auto lap = std::chrono::steady_clock::now();
  auto end_phase = [&](absl::string_view phase) {
    const auto now = std::chrono::steady_clock::now();
    report.AddPhase(phase, std::chrono::duration<double>(now - lap).count());
    lap = now;
  };
  // The floor does not depend on the schedule, but the loop-stack rewrite
  // removes buffers: it is taken once, of the program the planner (or
  // nothing) works on. A measurement, outside the pass time.
  auto measure_floor = [&]() -> absl::Status {
    TF_ASSIGN_OR_RETURN(MemoryFloor floor,
                        ComputeMemoryFloor(*module, size_fn, alias_info));
    report.floor_bytes = floor.bytes;
    report.floor_at = floor.at;
    lap = std::chrono::steady_clock::now();
    return absl::OkStatus();
  };
  // The figure the budget is judged by (memory_figure.h): HeapSimulator's
  // peak, already measured, or what BufferAssigner allocates.
  report.memory_figure =
      std::string(MemoryFigureName(options.memory_figure.figure));
  const bool by_heap_simulator =
      options.memory_figure.figure == MemoryFigure::kHeapSimulator;
  auto allocation = [&](const HloModule& m,
                        int64_t heap_sim_peak) -> absl::StatusOr<int64_t> {
    if (by_heap_simulator) return heap_sim_peak;
    return MeasureMemory(m, size_fn, alias_info, options.memory_figure);
  };
  // Of the schedule the planner starts from: a plan must go below it.
  int64_t allocation_scheduled = 0;
  auto resolve_relative_budget = [&]() {
    if (options.memory_limit_fraction <= 0) return;
    options.memory_limit_bytes = std::max<int64_t>(
        1, static_cast<int64_t>(
               options.memory_limit_fraction *
               static_cast<double>(report.allocation_before_bytes)));
    report.budget_bytes = options.memory_limit_bytes;
    report.AddNote(absl::StrCat("budget ", options.memory_limit_fraction,
                                "x of ", report.allocation_before_bytes,
                                " bytes (", report.memory_figure, ")"));
  };
  const bool had_schedule = module->has_schedule();
  report.instructions_before = CountInstructions(*module);
  // Re-scheduling keeps the instructions, so these costs serve the planner.
  // Library calls (cuDNN, cuBLAS) counted: the same FLOPs on GPU as on CPU.
  TF_ASSIGN_OR_RETURN(std::unique_ptr<RematCostAnalysis> costs,
                      AnalyzeCosts(*module, size_fn));
  report.flops_before = ModuleFlops(*module, *costs);
  end_phase("costs");
  if (had_schedule) {
    // Figures for the report (and the budget check): outside the pass time.
    TF_ASSIGN_OR_RETURN(ModuleMemory before,
                        TrackModuleMemory(*module, size_fn));
    report.peak_before_bytes = before.peak_bytes;
    entry_model = before.entry;
    TF_ASSIGN_OR_RETURN(report.heap_sim_before_bytes,
                        HeapSimulatorPeak(*module, size_fn, alias_info));
    TF_ASSIGN_OR_RETURN(report.allocation_before_bytes,
                        allocation(*module, report.heap_sim_before_bytes));
    allocation_scheduled = report.allocation_before_bytes;
    resolve_relative_budget();
    TF_RETURN_IF_ERROR(dump_before());
    lap = std::chrono::steady_clock::now();
  }

  // HeapSimulator's module-wide minimum allocates a loop-state buffer again
  // for the condition's and the body's parameters; the tracker, like buffer
  // assignment, counts it once. A miss only the simulator sees is that.
  auto had_loop_state_overcount = [&](const RematReport& r) {
    return by_heap_simulator && options.memory_limit_bytes > 0 &&
           r.peak_after_bytes <= options.memory_limit_bytes &&
           HasWhileLoop(*module);
  };
  auto finish = [&](bool changed) -> absl::StatusOr<RematReport> {
    // The pass ends here; what follows only measures it for the report.
    report.pass_seconds = 0;
    for (const auto& [phase, seconds] : report.phase_seconds) {
      report.pass_seconds += seconds;
    }
    if (changed) {
      TF_ASSIGN_OR_RETURN(ModuleMemory after,
                          TrackModuleMemory(*module, size_fn));
      report.peak_after_bytes = after.peak_bytes;
      entry_model = after.entry;
      TF_ASSIGN_OR_RETURN(report.heap_sim_after_bytes,
                          HeapSimulatorPeak(*module, size_fn, alias_info));
      TF_ASSIGN_OR_RETURN(report.allocation_after_bytes,
                          allocation(*module, report.heap_sim_after_bytes));
      TF_ASSIGN_OR_RETURN(std::unique_ptr<RematCostAnalysis> costs_after,
                          AnalyzeCosts(*module, size_fn));
      report.flops_after = ModuleFlops(*module, *costs_after);
    } else {
      report.peak_after_bytes = report.peak_before_bytes;
      report.heap_sim_after_bytes = report.heap_sim_before_bytes;
      report.allocation_after_bytes = report.allocation_before_bytes;
      report.flops_after = report.flops_before;
    }
    report.instructions_after = CountInstructions(*module);
    report.budget_met =
        options.memory_limit_bytes == 0 ||
        report.allocation_after_bytes <= options.memory_limit_bytes;
    if (!report.budget_met && report.stopped_by_flops_cap) {
      report.AddNote(absl::StrCat(
          "the compute cap (--xla_rematerialization_max_extra_flops=",
          options.max_extra_flops_fraction,
          " of the module's FLOPs), not the budget, stopped the plan"));
    }
    if (!report.budget_met && had_loop_state_overcount(report)) {
      // The planner sees the budget met: nothing in the entry to move.
      report.AddNote(absl::StrCat(
          "the tracker counts ", report.peak_after_bytes,
          " bytes, within the budget; HeapSimulator counts loop state once per "
          "computation naming it (while, condition, body): see hlo-remat "
          "--explain-peak"));
    }
    if (options.dump_dot) {
      TF_RETURN_IF_ERROR(WriteDotGraph(
          *module, size_fn, *entry_model, report,
          DumpPath(options.dump_dir, report.module, "after_remat.dot")));
    }
    if (options.dump_memlog) {
      TF_RETURN_IF_ERROR(WriteMemoryLog(
          *module, *entry_model, report,
          DumpPath(options.dump_dir, report.module, "remat_memlog.txt")));
    }
    return report;
  };
  // The module stays as given: the figures after are the figures before.
  auto nothing_done =
      [&](absl::string_view why) -> absl::StatusOr<RematReport> {
    end_phase("check");
    TF_RETURN_IF_ERROR(measure_floor());
    report.AddNote(absl::StrCat(why, ": nothing done"));
    report.scheduler_chosen = "unchanged";
    report.peak_scheduled_bytes = report.peak_before_bytes;
    report.heap_sim_scheduled_bytes = report.heap_sim_before_bytes;
    return finish(/*changed=*/false);
  };

  if (had_schedule && options.memory_limit_bytes > 0 &&
      report.allocation_before_bytes <= options.memory_limit_bytes) {
    return nothing_done("peak already within the budget");
  }
  if (options.algorithm == RematAlgorithm::kCompress && had_schedule &&
      !AnyValueCompressible(*module, size_fn,
                            options.small_node_limit_bytes())) {
    return nothing_done(kNothingCompact);
  }

  if (options.scheduler == RematScheduler::kGiven) {
    if (!had_schedule) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--xla_rematerialization_scheduler=given keeps the module's "
          "schedule, but module ",
          module->name(), " has none"));
    }
    report.scheduler_chosen = "given";
    report.heap_sim_scheduled_bytes = report.heap_sim_before_bytes;
  } else {
    // The given schedule is a candidate too: a module never starts the
    // algorithm from a schedule worse than the one it came with.
    std::optional<HloSchedule> given;
    if (had_schedule) given = module->schedule();
    TF_ASSIGN_OR_RETURN(
        ScheduleChoice choice,
        RescheduleModule(module, options.scheduler, size_fn, alias_info));
    report.scheduler_chosen = choice.scheduler;
    report.rescheduled = true;
    report.heap_sim_scheduled_bytes = choice.heap_sim_peak_bytes;
    if (given.has_value() &&
        choice.heap_sim_peak_bytes > report.heap_sim_before_bytes) {
      TF_RETURN_IF_ERROR(module->set_schedule(*std::move(given)));
      report.rescheduled = false;
      report.scheduler_chosen =
          absl::StrCat("given (", choice.scheduler, " was higher)");
      report.heap_sim_scheduled_bytes = report.heap_sim_before_bytes;
    }
  }
  TF_ASSIGN_OR_RETURN(ModuleMemory scheduled,
                      TrackModuleMemory(*module, size_fn));
  report.peak_scheduled_bytes = scheduled.peak_bytes;
  entry_model = scheduled.entry;
  end_phase("schedule");
  if (report.rescheduled) {
    // (Kept as given, the schedule's figure is the one measured before.)
    TF_ASSIGN_OR_RETURN(allocation_scheduled,
                        allocation(*module, report.heap_sim_scheduled_bytes));
    lap = std::chrono::steady_clock::now();
  }
  if (!had_schedule) {
    report.peak_before_bytes = report.peak_scheduled_bytes;
    report.heap_sim_before_bytes = report.heap_sim_scheduled_bytes;
    report.allocation_before_bytes = allocation_scheduled;
    resolve_relative_budget();
    TF_RETURN_IF_ERROR(dump_before());
    lap = std::chrono::steady_clock::now();
  }

  // Loop stacks that hold one invariant value at every step: read the value
  // instead of storing copies of it (exact, no compute), for the algorithms
  // that trade storage for recomputation; `compress` only changes layouts and
  // XLA's own pass, the baseline, does neither. The planner starts from the
  // rewritten module: "scheduled" figures are taken again.
  if (options.algorithm != RematAlgorithm::kXla &&
      PlannerConfigFor(options).recompute) {
    TF_ASSIGN_OR_RETURN(InvariantStacksResult stacks,
                        RemoveInvariantStacks(module, size_fn));
    report.invariant_stacks_removed = stacks.stacks_removed;
    report.invariant_stack_bytes = stacks.bytes_removed;
    if (stacks.stacks_removed > 0) {
      TF_ASSIGN_OR_RETURN(report.heap_sim_scheduled_bytes,
                          HeapSimulatorPeak(*module, size_fn, alias_info));
      TF_ASSIGN_OR_RETURN(allocation_scheduled,
                          allocation(*module, report.heap_sim_scheduled_bytes));
      TF_ASSIGN_OR_RETURN(ModuleMemory rewritten,
                          TrackModuleMemory(*module, size_fn));
      report.peak_scheduled_bytes = rewritten.peak_bytes;
      entry_model = rewritten.entry;
      TF_ASSIGN_OR_RETURN(costs, AnalyzeCosts(*module, size_fn));
    }
    end_phase("loop_stacks");
  }
  TF_RETURN_IF_ERROR(measure_floor());
  if (!options.export_graph_path.empty()) {
    // What a solver needs to plan the same schedule; outside the pass time.
    TF_ASSIGN_OR_RETURN(RematGraph graph,
                        BuildRematGraph(report.module, *entry_model, *costs,
                                        options.small_node_limit_bytes()));
    graph.memory_figure = report.memory_figure;
    graph.module_flops = report.flops_before;
    TF_RETURN_IF_ERROR(WriteRematGraph(graph, options.export_graph_path));
    lap = std::chrono::steady_clock::now();
  }

  if (options.algorithm == RematAlgorithm::kXla) {
    const int64_t added_before = CountInstructions(*module);
    TF_ASSIGN_OR_RETURN(
        XlaBaselineResult result,
        RunXlaRematerialization(module, options.memory_limit_bytes,
                                options.small_node_limit_bytes(), size_fn));
    report.instructions_added =
        std::max<int64_t>(0, CountInstructions(*module) - added_before);
    report.AddNote(absl::StrCat("HloRematerialization counted ",
                                result.reported_before_bytes, " -> ",
                                result.reported_after_bytes, " bytes"));
    end_phase("xla");
  } else {
    PlannerConfig config = PlannerConfigFor(options);
    config.entry_memory = entry_model;
    if (options.max_extra_flops_fraction >= 0) {
      report.max_extra_flops =
          options.max_extra_flops_fraction * report.flops_before;
      config.max_extra_flops = report.max_extra_flops;
    }
    // The planner's tracker and the simulator may disagree (operand buffer
    // reuse, loop state): the plan is judged by the simulator before it is
    // applied, against the schedule it started from.
    std::string rejection;
    config.keep_plan =
        [&](const HloModule& planned) -> absl::StatusOr<PlanVerdict> {
      TF_ASSIGN_OR_RETURN(
          int64_t peak,
          MeasureMemory(planned, size_fn, alias_info, options.memory_figure));
      const int64_t start = allocation_scheduled;
      std::string why = PlanRejection(start, peak, options.memory_limit_bytes);
      const bool keep = why.empty();
      if (!keep) rejection = std::move(why);
      return PlanVerdict{keep, peak};
    };
    TF_ASSIGN_OR_RETURN(PlannerResult result,
                        RunRematPlanner(module, config, size_fn, *costs));
    // The judging is inside the planner's time: shown apart.
    lap += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(result.judge_seconds));
    end_phase("plan");
    report.AddPhase("judge", result.judge_seconds);
    report.plans_tried = result.plans_tried;

    // Sites still over the budget that run a loop body or a branch: plan
    // inside it, on its own schedule, with what is left of the compute cap.
    PlannerConfig callee_config = PlannerConfigFor(options);
    if (config.max_extra_flops >= 0) {
      callee_config.max_extra_flops =
          std::max(0.0, config.max_extra_flops - result.extra_flops);
    }
    TF_ASSIGN_OR_RETURN(CalleePlanResult callees,
                        PlanCalledComputations(module, callee_config, size_fn));
    end_phase("callees");
    result.AddMovesOf(std::move(callees.totals));
    report.stopped_by_flops_cap = result.flops_capped;
    report.instructions_added = result.instructions_added;
    report.recomputed = result.recomputed;
    report.compressed = result.compressed;
    report.undone = result.undone;
    report.pinned = result.pinned;
    report.decisions = std::move(result.decisions);
    if (options.algorithm == RematAlgorithm::kStandardCompress &&
        result.compressible == 0) {
      report.AddNote(kNothingCompact);
    }
    if (options.algorithm == RematAlgorithm::kPath) {
      report.AddNote(
          absl::StrCat(result.articulation_points, " articulation points"));
    }
    if (result.plan_rejected) {
      report.AddNote(absl::StrCat(rejection, ": plan taken back"));
    }
    if (callees.computations_planned > 0) {
      report.AddNote(absl::StrCat(callees.computations_planned,
                                  " called computation(s) planned, ",
                                  callees.deepest_level, " level(s) deep"));
    }
  }
  lap = std::chrono::steady_clock::now();
  TF_RETURN_IF_ERROR(VerifyModule(module));
  end_phase("verify");
  if (options.check_live_ranges) {
    TF_RETURN_IF_ERROR(CheckLiveRanges(*module, options, alias_info));
    end_phase("check_live_ranges");
  }
  return finish(/*changed=*/true);
}

absl::StatusOr<bool> RematerializationPass::RunImpl(
    HloModule* module, const absl::flat_hash_set<absl::string_view>&) {
  if (!options_.enabled) return false;
  RematOptions options = options_;
  if (options.dump_dir.empty()) {
    options.dump_dir = module->config().debug_options().xla_dump_to();
  }
  TF_ASSIGN_OR_RETURN(report_,
                      RunRemat(module, options, size_fn_, alias_info_));
  LOG(INFO) << "rematerialization (" << report_.algorithm << ") on "
            << module->name() << ": peak " << report_.heap_sim_before_bytes
            << " -> " << report_.heap_sim_after_bytes << " bytes, budget "
            << report_.budget_bytes << (report_.budget_met ? " met" : " missed")
            << ", " << report_.instructions_added << " instructions added";
  VLOG(1) << report_.ToJson();
  return report_.instructions_added > 0 || report_.rescheduled ||
         report_.invariant_stacks_removed > 0;
}

}  // namespace remat
}  // namespace xla
