"""vecadd / other_stream — deliberately dishonest, for the integrity tests: a correct Triton
vector add, launched on a side stream of its own instead of the stream gpuprof gives launch().
The output is right once the device is idle, but the events on the timing stream bracket
nothing; measure/integrity.py's off-stream audit must make the row IMPOSSIBLE."""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from gpuprof.families import _torch

BLOCK_SIZE = 1024


@triton.jit
def vecadd_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    tl.store(c_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    torch = _torch.torch()
    a, b, c = (_torch.as_tensor(x) for x in (inputs["a"], inputs["b"], out))
    n = size["n"]
    side = torch.cuda.Stream()  # the mistake: work goes here, not on `stream`

    def launch(stream: Any) -> None:
        with torch.cuda.stream(side):
            vecadd_kernel[(triton.cdiv(n, BLOCK_SIZE),)](a, b, c, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)

    return launch
