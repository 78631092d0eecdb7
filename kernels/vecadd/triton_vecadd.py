"""vecadd / triton
Changed from grid, in Triton instead of CUDA C++: one program per BLOCK_SIZE = 1024 elements, each
a masked load of a and b, an add and a masked store, the way Triton's vector-add tutorial writes
it. The kernel says nothing about threads: Triton spreads the 1024 lanes over num_warps = 4 warps
(8 floats per thread) and, where it can prove the pointers are 16-byte aligned and n a multiple of
16 (it specializes on both), emits 16-byte loads like vectorized.cu; at an odd n the mask defeats
that and the loads go scalar. Expected limiter: DRAM bandwidth, as grid and vectorized.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from gpuprof.families import _torch

BLOCK_SIZE = 1024  # elements per program: 4 warps x 32 threads x 8 floats
NUM_WARPS = 4


@triton.jit
def vecadd_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # n < 2^31, so int32 offsets do not overflow
    mask = offsets < n  # the last program's lanes past n neither load nor store
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(c_ptr + offsets, a + b, mask=mask)


def add(a: Any, b: Any, c: Any, n: int) -> None:
    """c = a + b on the current torch stream (tensors of n float32 on one device)."""
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    vecadd_kernel[grid](a, b, c, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=NUM_WARPS)


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """gpuprof's entry point: launch(stream) adds the family's CuPy buffers in place (DLPack views,
    no copies) on gpuprof's CuPy stream."""
    a, b, c = (_torch.as_tensor(x) for x in (inputs["a"], inputs["b"], out))
    n = size["n"]

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):  # Triton launches on torch's current stream
            add(a, b, c, n)

    return launch
