"""BF16 buffers for the tensor-core families. CuPy has no bfloat16 type, so a BF16 array is held as its
16-bit patterns (uint16): the upper half of the FP32 pattern of the same value. Kernels see
`__nv_bfloat16*`, PyTorch sees a bfloat16 view of the same memory, the check sees float32 values."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

BITS = np.uint16  # how a BF16 buffer is stored
NAN = 0x7FC0  # a quiet NaN's pattern: the poison an unwritten output keeps
UNIT_ROUNDOFF = 2.0**-8  # 8 significant bits (7 stored): round to nearest is off by at most 2^-8 relative


def array_module(array: Any) -> ModuleType:
    """NumPy for a host array (the CPU tests' emulation), CuPy for a device one."""
    if isinstance(array, np.ndarray):
        return np
    from gpuprof.gpu import cupy

    return cupy()


def encode(values: Any) -> Any:
    """FP32 values rounded to the nearest BF16 (ties to even), as 16-bit patterns. Finite inputs only:
    the families draw them; a carry out of the largest finite value becomes infinity, as in hardware."""
    xp = array_module(values)
    bits = xp.ascontiguousarray(values, dtype=xp.float32).view(xp.uint32)
    round_half_even = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + round_half_even) >> 16).astype(BITS)


def decode(patterns: Any) -> Any:
    """16-bit BF16 patterns as float32 values (exact: BF16 is FP32 with the low 16 bits zero); NaN stays NaN."""
    xp = array_module(patterns)
    return (xp.ascontiguousarray(patterns).astype(xp.uint32) << 16).view(xp.float32)


def poisoned(xp: ModuleType, shape: tuple[int, ...]) -> Any:
    """A BF16 output of NaN patterns (xp: CuPy, the device): an element the kernel does not write fails the check."""
    return xp.full(shape, NAN, dtype=BITS)


def as_torch(patterns: Any) -> Any:
    """A torch.bfloat16 view of a device BF16 buffer (zero copy): DLPack carries int16, viewed as bfloat16."""
    from gpuprof.families import _torch

    t = _torch.torch()
    return _torch.as_tensor(patterns.view(array_module(patterns).int16)).view(t.bfloat16)
