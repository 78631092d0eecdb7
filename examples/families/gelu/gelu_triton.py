"""gelu / triton
The same tanh-form GELU in Triton: one program per 1024 elements, masked load and store. Triton has
no tanh in its core language, so tanh(z) is written as 2·sigmoid(2z) − 1 (exact in real numbers;
in FP32 within a few ulp of tanhf for the inputs the check draws). Expected limiter: DRAM bandwidth.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from gpuprof.families import _torch

BLOCK_SIZE = 1024


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    tanh = 2.0 * tl.sigmoid(2.0 * inner) - 1.0
    tl.store(y_ptr + offsets, 0.5 * x * (1.0 + tanh), mask=mask)


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """gpuprof's entry point: launch(stream) on gpuprof's stream, over the family's buffers (no copies)."""
    x, y = _torch.as_tensor(inputs["x"]), _torch.as_tensor(out)
    n = size["n"]
    grid = (triton.cdiv(n, BLOCK_SIZE),)

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            gelu_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)

    return launch
