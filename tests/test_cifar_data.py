"""The CIFAR-10 reader on small files in the release formats (no download)."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))

from cifar_data import DataError, load_cifar10  # noqa: E402


def pixels(n: int) -> np.ndarray:
    return np.arange(n * 3072, dtype=np.uint32).astype(np.uint8).reshape(n, 3072)


def test_python_pickle_release(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for i in (1, 2):
        with (folder / f"data_batch_{i}").open("wb") as f:
            pickle.dump({b"data": pixels(4), b"labels": [i] * 4}, f)
    x, y = load_cifar10(tmp_path)
    assert x.shape == (8, 32, 32, 3) and x.dtype == np.float32
    assert list(y) == [1] * 4 + [2] * 4
    assert abs(float(x.mean())) < 1e-4  # normalized per channel


def test_binary_release(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    rows = np.concatenate([np.full((5, 1), 7, np.uint8), pixels(5)], axis=1)
    rows.tofile(folder / "data_batch_1.bin")
    x, y = load_cifar10(tmp_path)
    assert x.shape == (5, 32, 32, 3) and list(y) == [7] * 5


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="no such folder"):
        load_cifar10(tmp_path / "nowhere")
    with pytest.raises(DataError, match="no CIFAR-10 batches found"):
        load_cifar10(tmp_path)


def test_corrupt_files_are_clear_errors(tmp_path):
    (tmp_path / "data_batch_1").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="not a CIFAR-10 python batch"):
        load_cifar10(tmp_path)
    other = tmp_path / "bin"
    other.mkdir()
    (other / "data_batch_1.bin").write_bytes(b"\x00" * 100)
    with pytest.raises(DataError, match="not a multiple of 3073"):
        load_cifar10(other)
