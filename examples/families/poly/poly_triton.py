"""poly / triton
The same op in Triton: one program per BLOCK_SIZE = 1024 elements, a masked load of x, the
arithmetic and a masked store of y. gpuprof calls make_launch(inputs, out, size) once per size and
times the launch(stream) it returns. Expected limiter: DRAM bandwidth, as the CUDA variant.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from gpuprof.families import _torch

BLOCK_SIZE = 1024  # elements per program: 4 warps x 32 threads x 8 floats
NUM_WARPS = 4


@triton.jit
def poly_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n  # the last program's lanes past n neither load nor store
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x * x + x + 1.0, mask=mask)


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """gpuprof's entry point: launch(stream) works on the family's CuPy buffers in place (DLPack
    views, no copies) on gpuprof's stream."""
    x, y = _torch.as_tensor(inputs["x"]), _torch.as_tensor(out)
    n = size["n"]
    grid = (triton.cdiv(n, BLOCK_SIZE),)

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):  # Triton launches on torch's current stream
            poly_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=NUM_WARPS)

    return launch
