"""Row softmax in Triton, one program per row, any width (an online max and sum over tiles of
BLOCK columns, then a second pass that writes), as a gpuprof variant:

    gpuprof run softmax --variants vectorized --add examples/variants/softmax_triton.py

Triton launches on PyTorch's current stream, which gpuprof sets to its timed stream around every
launch; the family's CuPy buffers become torch tensors without a copy (DLPack). Triton compiles at
the first launch. (kernels/softmax/triton_softmax.py is the built-in Triton softmax.)"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

BLOCK = 1024
NUM_WARPS = 4


@triton.jit
def softmax_row(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row, y_row = x_ptr + row * cols, y_ptr + row * cols
    lane_max = tl.full((BLOCK,), -float("inf"), tl.float32)
    lane_sum = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, cols, BLOCK):  # pass 1: each lane's running max and its sum rescaled to it
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offsets, mask=offsets < cols, other=-float("inf"))
        new_max = tl.maximum(lane_max, x)
        rescaled = lane_sum * tl.exp(lane_max - new_max) + tl.exp(x - new_max)
        lane_sum = tl.where(new_max == -float("inf"), 0.0, rescaled)  # a lane past the row's end stays 0
        lane_max = new_max
    row_max = tl.max(lane_max, axis=0)
    row_sum = tl.sum(tl.where(lane_max == -float("inf"), 0.0, lane_sum * tl.exp(lane_max - row_max)), axis=0)
    for start in range(0, cols, BLOCK):  # pass 2: write
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_row + offsets, mask=mask, other=-float("inf"))
        tl.store(y_row + offsets, tl.exp(x - row_max) / row_sum, mask=mask)


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    rows, cols = size["rows"], size["cols"]
    x, y = torch.from_dlpack(inputs["x"]), torch.from_dlpack(out)

    def launch(stream: Any) -> None:
        softmax_row[(rows,)](x, y, cols, BLOCK=BLOCK, num_warps=NUM_WARPS)  # torch's current stream: gpuprof's

    return launch
