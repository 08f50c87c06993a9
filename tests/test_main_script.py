"""The seed's own command line: remat flags that XLA never sees are named."""

from __future__ import annotations

from models.resnet_cifar_main import ignored_remat_flags_warning

REMAT = "--xla_use_hlo_rematerialization --xla_rematerialization_algorithm=path"


def test_auto_jit_on_cpu_without_global_jit_is_named():
    env = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2", "XLA_FLAGS": REMAT}
    warning = ignored_remat_flags_warning(env, enable_xla=False, has_gpu=False)
    assert warning is not None
    assert "--tf_xla_cpu_global_jit" in warning and "ignored" in warning
    assert "--xla_rematerialization_algorithm=path" in warning


def test_no_xla_at_all_is_named():
    warning = ignored_remat_flags_warning({"XLA_FLAGS": REMAT}, enable_xla=False, has_gpu=True)
    assert warning is not None and "--enable_xla" in warning


def test_runs_that_use_xla_are_not_warned():
    cpu_jit = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit", "XLA_FLAGS": REMAT}
    gpu_jit = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2", "XLA_FLAGS": REMAT}
    assert ignored_remat_flags_warning(cpu_jit, enable_xla=False, has_gpu=False) is None
    assert ignored_remat_flags_warning(gpu_jit, enable_xla=False, has_gpu=True) is None
    assert ignored_remat_flags_warning({"XLA_FLAGS": REMAT}, enable_xla=True, has_gpu=False) is None
    assert ignored_remat_flags_warning({}, enable_xla=False, has_gpu=False) is None


def test_the_harness_knows_every_zoo_model():
    import pytest

    from remat_harness.hlo_dump import ZOO_NAMES, ModelSpec

    zoo = pytest.importorskip("models.zoo")
    assert tuple(sorted(zoo.ZOO)) == ZOO_NAMES
    assert ModelSpec.parse("lstm").key == "lstm_b64_jit"
    assert ModelSpec.parse("resnet56v2", 32).key == "resnet56_v2_b32_jit"
    assert ModelSpec.parse("20").key == "resnet20_v1_b64_jit"
    with pytest.raises(ValueError, match="mobilenet"):
        ModelSpec.parse("vgg")
