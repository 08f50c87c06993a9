"""The gpusim tier: modules compiled deviceless for an H100 by the XLA GPU
compiler of the tensorflow wheel (`hlo-remat --platform gpu`), the pass run
where the patch's GPU hook runs it. Runs here: no GPU, no CUDA needed.

ResNet-20's input is TensorFlow's pre-optimization HLO of the whole step
(`*.before_optimizations.txt` in the dump `produce_hlo` caches)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

from remat_harness.engine import MEASURE_ONLY, run_hlo_remat
from remat_harness.flag_table import algorithms
from remat_harness.gpu import before_optimizations, predicted_peak
from remat_harness.hlo_dump import ModelSpec, produce_hlo
from remat_harness.paths import hlo_remat_binary
from remat_harness.remat_report import RematReport, kernels_text
from tests.baselines import check_at_most
from tests.test_explain_peak import PEAK_LINE, sections

pytestmark = pytest.mark.gpusim

TARGET = "h100_sxm"

# A small CNN step, pre-optimization: one convolution (a cuDNN custom-call on
# GPU), a ReLU and a GEMM.
SMALL_MODEL = """
HloModule small_cnn

ENTRY main {
  x = f32[8,16,16,8] parameter(0)
  w = f32[3,3,8,16] parameter(1)
  conv = f32[8,16,16,16] convolution(x, w), window={size=3x3 pad=1_1x1_1},
    dim_labels=b01f_01io->b01f
  zero = f32[] constant(0)
  zeros = f32[8,16,16,16] broadcast(zero), dimensions={}
  relu = f32[8,16,16,16] maximum(conv, zeros)
  flat = f32[8,4096] reshape(relu)
  w2 = f32[4096,10] parameter(2)
  logits = f32[8,10] dot(flat, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = (f32[8,10], f32[8,16,16,16]) tuple(logits, relu)
}
"""


def gpu_run(hlo: Path, work: Path, *flags: str, name: str = "run") -> tuple[int, dict | None, str]:
    """hlo-remat --platform gpu on `hlo`; (returncode, report, stderr)."""
    run = run_hlo_remat(
        hlo,
        ["--platform", "gpu", "--gpu-target", TARGET, *flags],
        work / f"{name}.json",
        output=work / f"{name}.hlo",
        timeout_s=600,
    )
    return run.returncode, run.raw, run.stderr


@pytest.fixture(scope="module")
def resnet20() -> Path:
    """TensorFlow's pre-optimization HLO of the ResNet-20 step (batch 64)."""
    dump = produce_hlo(ModelSpec(20, 1, 64, "jit")) / "dump"
    found = sorted(dump.glob("*.before_optimizations.txt"), key=lambda p: p.stat().st_size)
    assert found, f"no *.before_optimizations.txt in {dump}"
    return found[-1]


@pytest.fixture(scope="module")
def resnet20_baseline(resnet20: Path, tmp_path_factory) -> dict:
    """The pipeline without a budget: the predicted peak, and the wheel's own
    compile of the same input beside it."""
    work = tmp_path_factory.mktemp("resnet20_gpu")
    rc, report, stderr = gpu_run(
        resnet20,
        work,
        "--baseline-out",
        str(work / "baseline.hlo"),
        "--wheel-reference-out",
        str(work / "wheel.hlo"),
        name="baseline",
    )
    assert rc == 0, stderr[-2000:]
    assert report is not None
    report["_work"] = str(work)
    return report


def test_small_model_compiles_deviceless(tmp_path):
    src = tmp_path / "small.hlo"
    src.write_text(SMALL_MODEL)
    rc, report, stderr = gpu_run(src, tmp_path, "--baseline-out", str(tmp_path / "base.hlo"))
    assert rc == 0, stderr[-2000:]
    assert report["platform"] == "gpu" and report["gpu_target"] == TARGET
    text = (tmp_path / "base.hlo").read_text()
    assert "is_scheduled=true" in text
    assert "__cudnn$conv" in text, "the convolution became a cuDNN custom-call"
    assert report["heap_sim_before_bytes"] > 0
    assert report["buffer_assignment_before_bytes"] >= report["heap_sim_before_bytes"] // 2


def test_a_module_path_ending_in_pb_gets_the_binary_proto(tmp_path):
    """What another XLA build compiles backend-only
    (scripts/fit_gpu_check_backend_only.py): the same module as the text, its
    schedule included."""
    from tensorflow.compiler.xla.service import hlo_pb2

    src = tmp_path / "small.hlo"
    src.write_text(SMALL_MODEL)
    base_pb, base_text, after_pb = (tmp_path / n for n in ("base.pb", "base.hlo", "after.pb"))
    gpu = ["--platform", "gpu", "--gpu-target", TARGET, "--baseline-out", str(base_pb)]
    run = run_hlo_remat(src, gpu, tmp_path / "pb.json", output=after_pb)
    assert run.returncode == 0, run.stderr[-2000:]
    rc, _, stderr = gpu_run(src, tmp_path, "--baseline-out", str(base_text))
    assert rc == 0, stderr[-2000:]
    base = hlo_pb2.HloModuleProto.FromString(base_pb.read_bytes())
    after = hlo_pb2.HloModuleProto.FromString(after_pb.read_bytes())
    names = [i.name for c in base.computations for i in c.instructions]
    text = base_text.read_text()
    assert len(names) == text.count(" = "), "every instruction of the text, no more"
    assert all(f"%{name} = " in text for name in names)
    entry = next(c for c in base.computations if c.id == base.entry_computation_id)
    by_id = {i.id: i.name for i in entry.instructions}
    scheduled = [by_id[i] for i in base.schedule.sequences[entry.id].instruction_ids]
    entry_text = text[text.index("ENTRY") :]
    printed = sorted(by_id.values(), key=lambda name: entry_text.index(f"%{name} = "))
    assert scheduled == printed, "the entry's schedule, as the text prints it"
    assert after.name == base.name and after.schedule.sequences


def test_explain_peak_shows_the_gpu_modules_with_what_the_gpu_allocates(tmp_path):
    src = tmp_path / "small.hlo"
    src.write_text(SMALL_MODEL)
    run = run_hlo_remat(
        src,
        [
            "--platform",
            "gpu",
            "--gpu-target",
            TARGET,
            "--explain-peak",
            "2",
            "--xla_rematerialization_mem_limit=0.5x",
        ],
        tmp_path / "r.json",
        timeout_s=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    found = sections(run.stderr)
    assert set(found) == {"before", "after"}, run.stderr[-2000:]
    for label in ("before", "after"):
        line = PEAK_LINE.match(found[label][0])
        assert line, found[label]
        # The pipeline's modules without and with the pass, by the target's
        # alias rules: the report's HeapSimulator figure, and beside it what
        # the GPU allocates (BufferAssigner), not the CPU's assignment.
        assert int(line.group(2)) == run.raw[f"heap_sim_{label}_bytes"]
        assert int(line.group(5)) == run.raw[f"buffer_assignment_{label}_bytes"]
        largest = [entry for entry in found[label][1:] if "[" in entry]
        assert 1 <= len(largest) <= 2, found[label]


def test_resnet20_compiles_for_h100(resnet20_baseline):
    r = resnet20_baseline
    assert r["platform"] == "gpu" and r["gpu_target"] == TARGET
    # The typed report names every key the GPU path writes.
    typed = RematReport.from_json({k: v for k, v in r.items() if k != "_work"})
    assert typed.gpu_baseline is not None and typed.wheel_reference is not None
    assert sorted(set(r) - {f.name for f in fields(RematReport)} - {"_work"}) == []
    final = r["gpu_baseline"]
    assert final["fusions"] > 100, final
    assert final["tuple_custom_calls"] > 0, "cuDNN convolutions are tuple-shaped"
    # The predicted peak: HeapSimulator, and buffer assignment beside it.
    assert 50e6 < r["heap_sim_before_bytes"] < 400e6, r["heap_sim_before_bytes"]
    assert r["buffer_assignment_before_bytes"] >= r["heap_sim_before_bytes"]
    baseline = Path(r["_work"]) / "baseline.hlo"
    assert "is_scheduled=true" in baseline.read_text()


def test_rebuilt_pipeline_is_faithful(resnet20_baseline):
    """Without our pass, the rebuilt post-scheduling pipeline gives what the
    wheel's own GpuCompiler (RunBackend -> RunPostSchedulingPipelines) gives."""
    r = resnet20_baseline
    wheel = r["wheel_reference"]
    assert wheel["counts"] == r["gpu_baseline"], (wheel, r["gpu_baseline"])
    assert wheel["heap_sim_bytes"] == r["heap_sim_before_bytes"]
    assert wheel["buffer_assignment_bytes"] == r["buffer_assignment_before_bytes"]
    assert wheel["text_equal"], "same HLO text (module name and metadata aside)"


@pytest.fixture(scope="module")
def predicted(tmp_path_factory) -> dict[int, tuple[Path, dict]]:
    """Per ResNet depth: the pre-optimization HLO and the pipeline's report
    without the pass (the predicted peak), computed once."""
    found: dict[int, tuple[Path, RematReport]] = {}

    def get(depth: int) -> tuple[Path, RematReport]:
        if depth not in found:
            spec = ModelSpec(depth, 1, 64, "jit")
            work = tmp_path_factory.mktemp(f"resnet{depth}_gpu")
            found[depth] = (before_optimizations(spec), predicted_peak(spec, TARGET, work))
        return found[depth]

    return get  # type: ignore[return-value]


@pytest.mark.parametrize("depth", [20, 32])
@pytest.mark.parametrize("algorithm", algorithms())
def test_half_budget(predicted, depth, algorithm, tmp_path):
    hlo, base = predicted(depth)
    # On GPU the budget and the judge are what BufferAssigner allocates.
    assert base.memory_figure == "buffer_assignment"
    assert base.allocation_before_bytes == base.buffer_assignment_before_bytes
    budget = base.allocation_before_bytes // 2
    rc, r, stderr = gpu_run(
        hlo,
        tmp_path,
        f"--xla_rematerialization_algorithm={algorithm}",
        f"--xla_rematerialization_mem_limit={budget}",
        # `optimal`: path's plan beside the solver's; a short solve here.
        "--xla_rematerialization_optimal_seconds=5",
    )
    assert rc == 0, stderr[-2000:]
    assert r["platform"] == "gpu"
    # The same pipeline without the pass: the same predicted peak.
    assert r["heap_sim_before_bytes"] == base.heap_sim_before_bytes
    assert r["heap_sim_after_bytes"] <= r["heap_sim_before_bytes"], r
    assert r["buffer_assignment_after_bytes"] > 0
    assert "is_scheduled=true" in (tmp_path / "run.hlo").read_text()
    if algorithm != "compress":  # nothing compressible under plain bytes
        assert r["heap_sim_after_bytes"] < r["heap_sim_before_bytes"], r
    assert r["allocation_after_bytes"] == r["buffer_assignment_after_bytes"]
    assert r["budget_met"] == (r["allocation_after_bytes"] <= budget)
    ratio = r["allocation_after_bytes"] / r["allocation_before_bytes"]
    check_at_most(
        ratio,
        [f"gpusim_{TARGET}", f"resnet{depth}_v1_b64_jit", algorithm, "half_budget_max_ratio"],
        f"predicted GPU peak ratio at a 50% budget, {algorithm}",
    )


def test_bad_gpu_target_is_a_clear_error(tmp_path):
    src = tmp_path / "small.hlo"
    src.write_text(SMALL_MODEL)
    proc = subprocess.run(
        [str(hlo_remat_binary()), str(src), "--platform", "gpu", "--gpu-target", "h200_nope"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert "--gpu-target" in proc.stderr and "h200_nope" in proc.stderr
    assert "h100_sxm" in proc.stderr and "a100_sxm_80" in proc.stderr


def test_disable_cuda_removes_multi_output_fusions(resnet20, resnet20_baseline, tmp_path):
    with_fusions = resnet20_baseline["gpu_final"]["multi_output_fusions"]
    rc, r, stderr = gpu_run(
        resnet20,
        tmp_path,
        "--xla_rematerialization_disable_cuda",
        f"--xla_rematerialization_mem_limit={1 << 60}",
    )
    assert rc == 0, stderr[-2000:]
    assert r["disabled_passes"], r
    assert r["multi_output_fusions"] == 0, (
        f"{r['multi_output_fusions']} multi-output fusions remain with "
        f"{r['disabled_passes']} disabled (were {with_fusions})"
    )
    record = {
        "with": resnet20_baseline["gpu_final"],
        "without": r["gpu_final"],
        "heap_sim_with": resnet20_baseline["heap_sim_before_bytes"],
        "heap_sim_without": r["heap_sim_before_bytes"],
    }
    print(json.dumps(record))


def test_a_relative_budget_is_judged_in_bytes_on_gpu(resnet20, tmp_path):
    """0.1x is far below what any algorithm reaches: budget_met must say so
    (the GPU path once compared with the unresolved 0 and said met)."""
    rc, report, err = gpu_run(
        resnet20,
        tmp_path,
        "--xla_rematerialization_algorithm=standard",
        "--xla_rematerialization_mem_limit=0.1x",
    )
    assert rc == 0, err
    assert report["budget_bytes"] > 0
    assert report["budget_met"] == (report["allocation_after_bytes"] <= report["budget_bytes"])
    assert not report["budget_met"]


# Kernels recorded on a user's GPU (--gpu-autotune-results): one cuDNN entry
# for ResNet-20's first-stage 3x3 convolution, with a 16 MiB workspace.
AUTOTUNE_RESULTS = Path(__file__).parent / "autotune_resnet20_h100.txtpb"
WORKSPACE = "u8[16777216]"


def test_without_autotune_results_the_prediction_says_default_kernels(resnet20_baseline):
    r = resnet20_baseline
    assert r["kernels"] == "default"
    assert "--gpu-autotune-results" in r["kernels_note"]
    assert "autotune_hits" not in r


def test_autotune_results_pick_the_kernels_recorded_on_the_gpu(
    resnet20, resnet20_baseline, tmp_path
):
    rc, report, stderr = gpu_run(
        resnet20,
        tmp_path,
        f"--gpu-autotune-results={AUTOTUNE_RESULTS}",
        *MEASURE_ONLY.args(),  # the compile's kernels, no recomputed copies
        name="tuned",
    )
    assert rc == 0, stderr[-2000:]
    assert report["kernels"] == "autotune results"
    assert report["autotune_results"] == str(AUTOTUNE_RESULTS)
    # One key, found once (lookups are per distinct instruction); every
    # other convolution and GEMM kept XLA's default kernel.
    assert report["autotune_hits"] == 1 and report["autotune_misses"] > 10
    tuned = (tmp_path / "tuned.hlo").read_text()
    assert tuned.count(WORKSPACE) == 6, "each first-stage 3x3 convolution has the workspace"
    base = (Path(resnet20_baseline["_work"]) / "baseline.hlo").read_text()
    assert WORKSPACE not in base
    # The workspace is in what the GPU would allocate.
    assert report["allocation_before_bytes"] != resnet20_baseline["allocation_before_bytes"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "does not exist"),
        ("version: 2\n", "Version mismatch"),
        ("results {{", "Failed to parse"),
    ],
)
def test_unreadable_autotune_results_are_refused_naming_the_flag(tmp_path, content, says):
    src = tmp_path / "small.hlo"
    src.write_text(SMALL_MODEL)
    results = tmp_path / "results.txtpb"
    if content is not None:
        results.write_text(content)
    rc, _, stderr = gpu_run(src, tmp_path, f"--gpu-autotune-results={results}")
    assert rc == 2, stderr[-2000:]
    line = stderr.strip().splitlines()[-1]
    assert line.startswith(f"hlo-remat: --gpu-autotune-results {results}: ") and says in line


def test_the_harness_predicts_with_the_recorded_kernels(tmp_path):
    report = predicted_peak(
        ModelSpec(20, 1, 64, "jit"), TARGET, tmp_path, autotune_results=str(AUTOTUNE_RESULTS)
    )
    assert report.kernels == "autotune results" and report.autotune_hits == 1
    assert str(AUTOTUNE_RESULTS) in kernels_text(report)


def test_autotune_results_without_a_matching_entry_keep_the_default_prediction(
    resnet20, resnet20_baseline, tmp_path
):
    empty = tmp_path / "none.txtpb"
    empty.write_text("version: 3\n")
    rc, report, stderr = gpu_run(
        resnet20, tmp_path, f"--gpu-autotune-results={empty}", *MEASURE_ONLY.args()
    )
    assert rc == 0, stderr[-2000:]
    assert report["autotune_hits"] == 0 and report["autotune_misses"] > 10
    assert report["allocation_before_bytes"] == resnet20_baseline["allocation_before_bytes"]


def _capped_rerun(resnet20: Path, work: Path, cap: str, budget: str = "0.5x") -> tuple[dict, Path]:
    rerun = work / "rerun.json"
    rc, free, err = gpu_run(
        resnet20,
        work,
        "--xla_rematerialization_algorithm=path",
        f"--xla_rematerialization_mem_limit={budget}",
        "--xla_rematerialization_max_extra_flops=none",
        "--capped-rerun",
        cap,
        "--capped-report",
        str(rerun),
        name="free",
    )
    assert rc == 0, err[-2000:]
    assert free is not None
    return free, rerun


def test_a_capped_rerun_plans_as_a_run_with_the_cap_alone(resnet20, tmp_path):
    """`remat-harness fit` asks the uncapped and the capped question of one
    compile (--capped-rerun): the second plan starts from the same module at
    the hook, so it is the one a run with the cap alone makes."""
    free, rerun = _capped_rerun(resnet20, tmp_path, "0.001")
    spent = (free["flops_after"] - free["flops_before"]) / free["flops_before"]
    assert spent > 0.001, "the uncapped plan answers both"
    rc, alone, err = gpu_run(
        resnet20,
        tmp_path,
        "--xla_rematerialization_algorithm=path",
        "--xla_rematerialization_mem_limit=0.5x",
        "--xla_rematerialization_max_extra_flops=0.001",
        name="alone",
    )
    assert rc == 0, err[-2000:]
    assert alone is not None
    second = json.loads(rerun.read_text())
    for key in (
        "allocation_before_bytes",
        "allocation_after_bytes",
        "heap_sim_after_bytes",
        "flops_after",
        "instructions_after",
        "budget_met",
        "max_extra_flops",
        "frontier",
    ):
        assert second[key] == alone[key], key
    assert second["flops_after"] - second["flops_before"] <= 0.001 * second["flops_before"]


def test_no_capped_rerun_where_the_uncapped_plan_answers_both(resnet20, tmp_path):
    free, rerun = _capped_rerun(resnet20, tmp_path, "100")
    assert free["budget_met"]
    assert not rerun.exists()


def test_no_capped_rerun_where_the_uncapped_plan_misses_within_the_cap(resnet20, tmp_path):
    """Below the floor the uncapped plan is the lowest it reaches; within the
    cap, the capped search is taken to miss too, and is not run."""
    free, rerun = _capped_rerun(resnet20, tmp_path, "100", budget="0.05x")
    assert not free["budget_met"]
    assert free["flops_after"] > free["flops_before"], "the pass made a plan"
    assert not rerun.exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--platform", "gpu", "--capped-rerun", "0.1"], "go together"),
        (["--capped-rerun", "0.1", "--capped-report", "r.json"], "need --platform gpu"),
        (["--platform", "gpu", "--capped-rerun", "-1", "--capped-report", "r.json"], "-1"),
    ],
)
def test_a_bad_capped_rerun_is_refused_naming_the_option(tmp_path, args, says):
    hlo = tmp_path / "small.hlo"
    hlo.write_text(SMALL_MODEL)
    proc = subprocess.run(
        [str(hlo_remat_binary()), str(hlo), *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and "--capped-re" in proc.stderr, proc.stderr
