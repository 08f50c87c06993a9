"""The GPU tier: a patched TensorFlow on a GPU, the real allocator peak with
and without the pass. Skips, with the reason, anywhere else."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from remat_harness.gpu import DEFAULT_TARGET, predicted_peak
from remat_harness.hlo_dump import MODES, ModelSpec, run_model
from remat_harness.paths import REPORTS_DIR
from remat_harness.tf_runtime import gpu_available, tensorflow_is_patched
from tests.baselines import baselines

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def patched_gpu() -> None:
    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"GPU tier: {why}")
    ok, why = tensorflow_is_patched()
    if not ok:
        pytest.skip(f"GPU tier: {why}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [20, 56])
def test_remat_lowers_the_allocator_peak(patched_gpu, size, mode, tmp_path):
    spec = ModelSpec(size, 1, 64, mode)
    limits = baselines()["gpu"]
    # scripts/run_suite.py --budget-fraction / --algorithm pass these in.
    fraction = float(os.environ.get("REMAT_GPU_BUDGET_FRACTION", limits["budget_fraction"]))
    algorithm = os.environ.get("REMAT_GPU_ALGORITHM", limits["algorithm"])
    base = run_model(spec, tmp_path / "base", train_steps=5, device="gpu")
    assert base["gpu_peak_bytes"], base
    budget = int(base["gpu_peak_bytes"] * fraction)
    flags = (
        f"--xla_use_hlo_rematerialization --xla_rematerialization_mem_limit={budget} "
        f"--xla_rematerialization_algorithm={algorithm} "
        "--xla_rematerialization_small_node_limit=1"
    )
    remat = run_model(spec, tmp_path / "remat", train_steps=5, extra_xla_flags=flags, device="gpu")
    drop = 1.0 - remat["gpu_peak_bytes"] / base["gpu_peak_bytes"]
    record = {
        "model": spec.key,
        "peak_before": base["gpu_peak_bytes"],
        "peak_after": remat["gpu_peak_bytes"],
        "drop": drop,
        "budget_fraction": fraction,
        "algorithm": algorithm,
        "step_time_ratio": remat["step_time_median_s"] / base["step_time_median_s"],
    }
    if mode == "jit":
        # The whole step is one module: the deviceless prediction for this
        # GPU's spec (REMAT_GPU_TARGET, an embedded spec name) stands beside
        # the allocator's peak.
        target = os.environ.get("REMAT_GPU_TARGET", DEFAULT_TARGET)
        predicted = predicted_peak(spec, target, tmp_path / "predicted").allocation_before_bytes
        record.update(gpu_target=target, predicted_peak_before=predicted)
    REPORTS_DIR.mkdir(parents=True, exist_ok=True)
    with (REPORTS_DIR / "gpu_tier.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")
    if mode == "jit":
        # The allocator also holds the input batch, cuDNN workspaces chosen
        # by autotuning and its own rounding: a margin, then a fraction.
        allowed = (
            record["predicted_peak_before"] * (1 + limits["prediction_tolerance"])
            + limits["prediction_slack_bytes"]
        )
        assert base["gpu_peak_bytes"] <= allowed, (
            f"{spec.key}: allocator peak {base['gpu_peak_bytes']:,} is above the predicted "
            f"allocation {record['predicted_peak_before']:,} by more than baselines.json allows"
        )
        least_allowed = record["predicted_peak_before"] * limits["prediction_min_ratio"]
        assert base["gpu_peak_bytes"] >= least_allowed, (
            f"{spec.key}: allocator peak {base['gpu_peak_bytes']:,} is below the predicted "
            f"allocation {record['predicted_peak_before']:,}: the prediction is not what this "
            "GPU allocates (REMAT_GPU_TARGET?)"
        )
    # The drops asked for are at the baseline's budget; a looser budget asks
    # proportionally less, a tighter one no more.
    least = limits["min_peak_drop"][mode] * min(
        1.0, (1 - fraction) / (1 - limits["budget_fraction"])
    )
    assert drop >= least, (
        f"{spec.key}: peak dropped {drop:.3f}, baseline asks at least {least}"
        f" (tests/baselines.json); {record}"
    )
    np.testing.assert_allclose(remat["losses"], base["losses"], rtol=limits["loss_rtol"])
