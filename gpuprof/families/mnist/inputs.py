"""The step's inputs: the batch (synthetic, or MNIST's IDX files from $GPUPROF_MNIST_DATA), the
initial weights, the pinned host copy the step loads, and the NaN-poisoned output."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuprof.errors import InputError, UsageError
from gpuprof.families.mnist.layout import CLASSES, HIDDEN, IMAGE, PARAMETERS, batch_of, layout
from gpuprof.gpu import cupy

PIXEL_MEAN, PIXEL_STD = 0.1307, 0.3081  # the course's (torchvision's) MNIST normalisation
DATA_ENV = "GPUPROF_MNIST_DATA"
IDX_IMAGES, IDX_LABELS = "train-images-idx3-ubyte", "train-labels-idx1-ubyte"


def data_folder() -> Path | None:
    value = os.environ.get(DATA_ENV)
    return Path(value) if value else None


def synthetic_batch(batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(images float32 (N, 1, 28, 28) normalised, labels int64 (N,)): class templates + noise, 8-bit pixels."""
    templates = np.random.default_rng(2024).uniform(0.0, 1.0, (CLASSES, IMAGE, IMAGE))  # one fixed set
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, batch)
    pixels = np.clip(0.8 * templates[labels] + rng.uniform(0.0, 0.5, (batch, IMAGE, IMAGE)), 0.0, 1.0)
    return _normalise(np.round(pixels * 255.0)), labels.astype(np.int64)


def _normalise(pixels_0_255: np.ndarray) -> np.ndarray:
    images = ((pixels_0_255 / 255.0 - PIXEL_MEAN) / PIXEL_STD).astype(np.float32)
    return images.reshape(-1, 1, IMAGE, IMAGE)


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (unsigned bytes): magic 0x0000080D with D dimensions, big-endian sizes, then data."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise InputError(f"{path}: not an IDX file of unsigned bytes (magic {raw[:4].hex()})")
    dims = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims)
    if data.size != math.prod(shape):
        raise InputError(f"{path}: header says {shape} but holds {data.size} bytes")
    return data.reshape(shape)


def idx_batch(folder: Path, batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    images, labels = read_idx(folder / IDX_IMAGES), read_idx(folder / IDX_LABELS)
    if images.shape[1:] != (IMAGE, IMAGE) or labels.shape != images.shape[:1]:
        raise InputError(f"{folder}: expected N x 28 x 28 images and N labels, got {images.shape} and {labels.shape}")
    if images.shape[0] < batch:
        raise UsageError(f"{folder} holds {images.shape[0]} images, fewer than the batch {batch}")
    start = int(np.random.default_rng(seed).integers(0, images.shape[0] - batch + 1))
    return _normalise(images[start:start + batch].astype(np.float64)), labels[start:start + batch].astype(np.int64)


def load_batch(batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    folder = data_folder()
    return idx_batch(folder, batch, seed) if folder else synthetic_batch(batch, seed)


def initial_params(seed: int) -> np.ndarray:
    """PyTorch's default initialisation, flat float32: weights and linear biases uniform in
    ±1/sqrt(fan_in), batchnorm weight 1 and bias 0; padding zero."""
    lay = layout()
    rng = np.random.default_rng(seed)
    flat = np.zeros(lay.padded, dtype=np.float32)
    fan_in = {"conv1": 9, "conv2": 32 * 9, "fc1": 64 * 7 * 7, "fc2": HIDDEN}
    for i, (name, _shape) in enumerate(PARAMETERS):
        layer, kind = name.split(".")
        if layer.startswith("bn"):
            value = np.ones(lay.sizes[i]) if kind == "weight" else np.zeros(lay.sizes[i])
        else:
            bound = 1.0 / math.sqrt(fan_in[layer])
            value = rng.uniform(-bound, bound, lay.sizes[i])
        flat[lay.segment(i)] = value
    return flat


@dataclass
class HostBatch:
    """The batch in pinned host memory, what each step copies to the device. Not an array (no
    .copy()), so the check's snapshot leaves it alone; "x" and "labels" are its device twins."""

    images: np.ndarray
    labels: np.ndarray


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    images, labels = load_batch(batch_of(size), seed)
    host = HostBatch(_pinned(images), _pinned(labels))
    return {"host": host, "x": cp.asarray(images), "labels": cp.asarray(labels),
            "params": cp.asarray(initial_params(seed % 2**32))}


def _pinned(array: np.ndarray) -> np.ndarray:
    """A copy of array in page-locked host memory (CuPy's pinned pool), so the step's copy is async."""
    alloc = getattr(getattr(cupy(), "cuda", None), "alloc_pinned_memory", None)
    if alloc is None:  # a CuPy stand-in without CUDA (the manifest tests trace plan() on numpy)
        return array.copy()
    copy = np.frombuffer(alloc(array.nbytes), dtype=array.dtype, count=array.size).reshape(array.shape)
    copy[...] = array
    return copy


def make_output(size: dict[str, int]) -> Any:
    batch_of(size)
    cp = cupy()
    return cp.full(layout().total, cp.nan, dtype=cp.float32)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    raise InputError("mnist variants are multi-kernel steps: they launch through plan(), not one kernel")

