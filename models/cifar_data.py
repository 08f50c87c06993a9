"""CIFAR-10 input: synthetic by default, or the real dataset from a local folder.

Nothing is downloaded. The real dataset is read from the python-pickle release
(`cifar-10-batches-py/data_batch_*`) or the binary release
(`cifar-10-batches-bin/data_batch_*.bin`).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

IMAGE_BYTES = 32 * 32 * 3


class DataError(RuntimeError):
    """The CIFAR-10 folder is missing or malformed."""


def synthetic_batch(batch_size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((batch_size, 32, 32, 3), dtype=np.float32)
    labels = rng.integers(0, 10, size=(batch_size,), dtype=np.int32)
    return images, labels


def _load_pickle(files: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    images, labels = [], []
    for f in files:
        try:
            with f.open("rb") as fh:
                entry = pickle.load(fh, encoding="bytes")
            data = np.asarray(entry[b"data"], dtype=np.uint8)
            images.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            labels.append(np.asarray(entry[b"labels"], dtype=np.int32))
        except (OSError, KeyError, ValueError, pickle.UnpicklingError, EOFError) as e:
            raise DataError(f"{f}: not a CIFAR-10 python batch ({e})") from e
    return np.concatenate(images), np.concatenate(labels)


def _load_binary(files: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    images, labels = [], []
    for f in files:
        raw = np.fromfile(f, dtype=np.uint8)
        if raw.size == 0 or raw.size % (IMAGE_BYTES + 1) != 0:
            raise DataError(f"{f}: size {raw.size} is not a multiple of {IMAGE_BYTES + 1}")
        rows = raw.reshape(-1, IMAGE_BYTES + 1)
        labels.append(rows[:, 0].astype(np.int32))
        images.append(rows[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return np.concatenate(images), np.concatenate(labels)


def load_cifar10(data_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Returns normalized float32 images (N, 32, 32, 3) and int32 labels."""
    root = Path(data_dir)
    if not root.is_dir():
        raise DataError(f"--data_dir {root}: no such folder")
    for sub in (root, root / "cifar-10-batches-py"):
        files = sorted(sub.glob("data_batch_[0-9]"))
        if files:
            images, labels = _load_pickle(files)
            break
    else:
        for sub in (root, root / "cifar-10-batches-bin"):
            files = sorted(sub.glob("data_batch_*.bin"))
            if files:
                images, labels = _load_binary(files)
                break
        else:
            raise DataError(
                f"--data_dir {root}: no CIFAR-10 batches found "
                "(expected cifar-10-batches-py/data_batch_N"
                " or cifar-10-batches-bin/data_batch_N.bin)"
            )
    x = images.astype(np.float32) / 255.0
    x = (x - x.mean(axis=(0, 1, 2))) / x.std(axis=(0, 1, 2))
    return x, labels
