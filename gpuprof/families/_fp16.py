"""FP16 buffers for the tensor-core families, held as 16-bit patterns (uint16) like _bf16's, so both
16-bit formats travel the same way: kernels see `__half*`, PyTorch a float16 view of the same memory,
the check float32 values. NumPy and CuPy have float16, so the rounding is theirs (to nearest even)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from gpuprof.families._bf16 import array_module

BITS = np.uint16  # how an FP16 buffer is stored
NAN = 0x7E00  # a quiet NaN's pattern: the poison an unwritten output keeps
UNIT_ROUNDOFF = 2.0**-11  # 11 significant bits (10 stored): round to nearest is off by at most 2^-11 relative
LARGEST = 65504.0  # the largest finite FP16 value: beyond it an output rounds to infinity


def encode(values: Any) -> Any:
    """FP32 values rounded to the nearest FP16 (ties to even), as 16-bit patterns; beyond LARGEST, infinity."""
    xp = array_module(values)
    return xp.ascontiguousarray(values, dtype=xp.float32).astype(xp.float16).view(BITS)


def decode(patterns: Any) -> Any:
    """16-bit FP16 patterns as float32 values (exact: every FP16 value is an FP32 one); NaN stays NaN."""
    xp = array_module(patterns)
    return xp.ascontiguousarray(patterns, dtype=BITS).view(xp.float16).astype(xp.float32)


def poisoned(xp: ModuleType, shape: tuple[int, ...]) -> Any:
    """An FP16 output of NaN patterns (xp: CuPy, the device): an element the kernel does not write fails the check."""
    return xp.full(shape, NAN, dtype=BITS)


def as_torch(patterns: Any) -> Any:
    """A torch.float16 view of a device FP16 buffer (zero copy): DLPack carries int16, viewed as float16."""
    from gpuprof.families import _torch

    t = _torch.torch()
    return _torch.as_tensor(patterns.view(array_module(patterns).int16)).view(t.float16)
