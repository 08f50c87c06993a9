"""The README's path for a user's own model, from a folder outside the
checkout: dump a step with XLA_FLAGS, pick the file the README names, run
hlo-remat with a relative budget, read the report. And every link in the
README and docs/ leads somewhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from remat_harness.paths import REPO_ROOT

TRAIN = """
import tensorflow as tf

model = tf.keras.Sequential([
    tf.keras.Input((16, 16, 3)),
    tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
    tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
    tf.keras.layers.GlobalAveragePooling2D(),
    tf.keras.layers.Dense(10),
])
opt = tf.keras.optimizers.SGD(0.1)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

@tf.function(jit_compile=True)
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss

train_step(tf.random.normal((32, 16, 16, 3)), tf.random.uniform((32,), 0, 10, tf.int32))
"""


@pytest.mark.slow
def test_a_users_own_step_through_the_readme_recipe(engine, tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_dump_to=dump --xla_dump_hlo_as_text",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    subprocess.run(
        [sys.executable, "train.py"], cwd=tmp_path, env=env, check=True, capture_output=True
    )
    (cpu_file,) = (tmp_path / "dump").glob("*train_step*.cpu_after_optimizations.txt")
    (gpu_file,) = (tmp_path / "dump").glob("*train_step*.before_optimizations.txt")
    budget = ["--xla_rematerialization_mem_limit=0.5x", "--xla_rematerialization_algorithm=path"]
    cpu = subprocess.run(
        [str(engine), str(cpu_file), *budget, "-o", "out.hlo", "--report", "report.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cpu.returncode == 0, cpu.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["budget_bytes"] == report["allocation_before_bytes"] // 2
    assert report["allocation_after_bytes"] <= report["allocation_before_bytes"]
    assert 0 < report["floor_bytes"] <= report["allocation_after_bytes"]
    assert (tmp_path / "out.hlo").exists() and "budget" in cpu.stderr
    gpu = subprocess.run(
        [str(engine), str(gpu_file), "--platform", "gpu", *budget, "--report", "gpu.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert gpu.returncode == 0, gpu.stderr
    assert json.loads((tmp_path / "gpu.json").read_text())["memory_figure"] == "buffer_assignment"


_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


@pytest.mark.parametrize(
    "page", ["README.md", *sorted(p.name for p in (REPO_ROOT / "docs").glob("*.md"))]
)
def test_every_link_leads_somewhere(page):
    path = REPO_ROOT / page if page == "README.md" else REPO_ROOT / "docs" / page
    text = path.read_text()
    for target, anchor in _LINK.findall(text):
        if target.startswith("http"):
            continue
        linked = (path.parent / target).resolve()
        assert linked.exists(), f"{page} links to {target}, which does not exist"
        if anchor:
            headings = {
                re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                for h in re.findall(r"^#+ (.*)$", linked.read_text(), re.M)
            }
            assert anchor[1:] in headings, f"{page}: no heading for {target}{anchor}"
