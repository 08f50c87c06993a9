#!/usr/bin/env python3
"""Runs `remat-harness fit` on the models of models/fit_examples.py for each
GPU and policy, and writes the markdown table README.md and
docs/measured.md show. Resumable: a cell with its fit.json is not run again.

    python scripts/fit_table.py [--models resnet50,decoder] [--gpus h100_sxm]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from remat_harness.fit import FitResult  # noqa: E402

MODELS = ("resnet50", "mobilenetv2", "densenet121", "decoder")
GPUS = ("a100_sxm_40", "h100_sxm")
POLICIES = ("f32", "mixed_bfloat16")


def run_cell(model: str, gpu: str, policy: str, out: Path, workers: int = 0) -> dict:
    cell = out / f"{model}_{policy}_{gpu}"
    if not (cell / "fit.json").exists():
        start = time.monotonic()
        cmd = [
            sys.executable,
            "-m",
            "remat_harness",
            "fit",
            "--model",
            f"models.fit_examples:{model}",
            "--gpu",
            gpu,
            "--policy",
            policy,
            "--out",
            str(cell),
            *(["--workers", str(workers)] if workers else []),
        ]
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        cell.mkdir(parents=True, exist_ok=True)
        (cell / "fit.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            return {
                "model": model,
                "gpu": gpu,
                "policy": policy,
                "error": (proc.stdout + proc.stderr).strip().splitlines()[-1],
            }
        data = json.loads((cell / "fit.json").read_text())
        data["seconds"] = time.monotonic() - start
        (cell / "fit.json").write_text(json.dumps(data, indent=2) + "\n")
    data = json.loads((cell / "fit.json").read_text())
    # Answers as this checkout reads the probes (a cell may predate a rule).
    data["answers"] = FitResult.from_json(data).to_json()["answers"]
    return {**data, "model": model, "gpu": gpu, "policy": policy}


def _answer(cell: dict, name: str) -> str:
    a = cell["answers"][name]
    if a is None:
        return "none"
    extra = f" (+{100 * a['extra_flops']:.1f}%)" if name != "without" else ""
    return f"{a['batch']}{extra}"


def markdown(cells: list[dict]) -> str:
    rows = [
        "| model | policy | GPU | (a) without | (b) pass, <=10% FLOPs | (c) pass, any cost "
        "| (b)/(a) | (c)/(a) | probes | time |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in cells:
        if "error" in c:
            rows.append(f"| {c['model']} | {c['policy']} | {c['gpu']} | {c['error']} |")
            continue
        a = c["answers"]["without"]
        base = a["batch"] if a else 0

        def ratio(name: str, c: dict = c, base: int = base) -> str:
            got = c["answers"][name]
            return f"{got['batch'] / base:.2f}" if got and base else "-"

        seconds = c.get("seconds")
        rows.append(
            f"| {c['model']} | {c['policy']} | {c['gpu']} | {_answer(c, 'without')} | "
            f"{_answer(c, 'capped')} | {_answer(c, 'any_cost')} | {ratio('capped')} | "
            f"{ratio('any_cost')} | {len(c['probes'])} | "
            f"{'' if seconds is None else f'{seconds / 60:.1f} min'} |"
        )
    return "\n".join(rows) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--gpus", default=",".join(GPUS))
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--out", type=Path, default=REPO / "reports" / "fit_table")
    p.add_argument(
        "--workers", type=int, default=0, help="fit's local Dask cluster of N processes (0: none)"
    )
    args = p.parse_args()
    cells = []
    for model in args.models.split(","):
        for policy in args.policies.split(","):
            for gpu in args.gpus.split(","):
                cells.append(run_cell(model, gpu, policy, args.out, args.workers))
                print(markdown(cells[-1:]).splitlines()[-1], flush=True)
    (args.out / "table.md").write_text(markdown(cells))
    print(args.out / "table.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
