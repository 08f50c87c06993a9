"""What the installed TensorFlow can do: a GPU, and remat.patch.

Both are asked of TensorFlow itself in a subprocess (so a crash or a CUDA
error cannot take the caller down): the patch is detected by asking XLA to
parse the pass's enable flag, which an unpatched XLA rejects as an
unknown flag, never by a version string.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

from remat_harness.flag_table import flag

_PROBE_PATCH = """
import tensorflow as tf
f = tf.function(lambda x: x * 2.0 + 1.0, jit_compile=True)
print(float(f(tf.constant(1.0))))
"""

_PROBE_GPU = """
import tensorflow as tf
print(len(tf.config.list_physical_devices("GPU")))
"""


def _python(code: str, env: dict[str, str], timeout_s: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout_s
    )


@functools.lru_cache(maxsize=1)
def tensorflow_is_patched() -> tuple[bool, str]:
    enable = flag("enable").name
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    # =false: XLA must parse the flag, the pass itself stays off.
    env["XLA_FLAGS"] = f"--{enable}=false"
    env.pop("TF_XLA_FLAGS", None)
    probe = _python(_PROBE_PATCH, env)
    if probe.returncode == 0 and probe.stdout.strip().endswith("3.0"):
        return True, f"XLA parsed --{enable}: remat.patch is in"
    if enable in probe.stderr:
        return False, (
            f"the installed TensorFlow is not patched: XLA rejects --{enable} as an "
            "unknown flag (build the patched wheel with scripts/build_wheel.py)"
        )
    tail = (probe.stderr.strip().splitlines() or ["no output"])[-1]
    return False, f"could not ask XLA about the patch (exit {probe.returncode}: {tail})"


@functools.lru_cache(maxsize=1)
def gpu_available() -> tuple[bool, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    probe = _python(_PROBE_GPU, env)
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"TensorFlow could not list GPUs (exit {probe.returncode}: {tail})"
    count = int(probe.stdout.strip().splitlines()[-1])
    if count == 0:
        return False, "TensorFlow sees no GPU on this machine"
    return True, f"{count} GPU(s)"
