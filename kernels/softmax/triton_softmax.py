"""softmax / triton
Triton's fused-softmax tutorial, with a second kernel for rows too long to hold. Rows of up to
ONCHIP_MAX_COLS columns: one program per row loads the whole row once (BLOCK = the next power of
two, masked lanes -inf), subtracts the row max, exponentiates, divides by the sum and stores, all
on chip, so the row is read once and written once, like vectorized.cu; Triton lays the block out
over the warps and writes the reductions. Longer rows take the online kernel: a Triton block is
a power of two, so GPT-2's 50304 columns need a 65536-wide one (30 % padding) held in registers
all at once, and ptxas spills it (255 registers and ~500 B of spills a thread at 8 warps; still
spills at 32), where vectorized.cu holds 51200 floats without spilling. In the online kernel a
persistent grid of WIDE_PROGRAMS_PER_SM programs per SM walks the rows; per row, one pass over
TILE-wide column tiles keeps a running max (one max per tile) and per-lane sums rescaled by
exp(m_old - m_new), then a second pass writes exp(x - max) / sum. Two reads and a write, as
warp_shuffle.cu; with about one L2's worth of rows in flight the second read can partly come from
L2. Sums are per lane, then a tree: the error grows like sqrt(cols). Expected limiter: DRAM
bandwidth (at long rows, 1.5x the minimum traffic unless L2 catches the second read).
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from gpuprof.families import _torch

ONCHIP_MAX_COLS = 8192  # up to here the whole row lives in registers: 8192 / (16 warps x 32) = 16 floats a thread
TILE = 4096  # columns per step of the online kernel: 16 floats a thread at 8 warps
WIDE_WARPS = 8
WIDE_PROGRAMS_PER_SM = 2  # 2 x 132 rows of 50304 floats in flight on an H100: ~52 MB, about its L2


@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    """One program per row; the row (cols <= BLOCK) is loaded once and kept in registers."""
    row = tl.cast(tl.program_id(0), tl.int64)  # rows * cols may pass 2^31
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)  # numerically stable: the largest term is exp(0) = 1
    num = tl.exp(z)  # the -inf lanes give exactly 0 and drop out of the sum
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * cols + offsets, num / den, mask=mask)


@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, rows, cols, TILE: tl.constexpr):
    """A persistent grid over rows; per row an online (max, sum) pass over column tiles, then a write pass."""
    for row in tl.range(tl.program_id(0), rows, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * cols
        y_row = y_ptr + tl.cast(row, tl.int64) * cols
        m = -float("inf")  # the running row max (a scalar)
        s = tl.zeros([TILE], dtype=tl.float32)  # per-lane sums of exp(x - m): cols / TILE terms each
        for start in range(0, cols, TILE):
            offsets = start + tl.arange(0, TILE)
            x = tl.load(x_row + offsets, mask=offsets < cols, other=-float("inf"))
            m_new = tl.maximum(m, tl.max(x, axis=0))  # finite: every tile has at least one column
            s = s * tl.exp(m - m_new) + tl.exp(x - m_new)  # exp(-inf) = 0 for the first tile and masked lanes
            m = m_new
        total = tl.sum(s, axis=0)
        for start in range(0, cols, TILE):
            offsets = start + tl.arange(0, TILE)
            mask = offsets < cols
            x = tl.load(x_row + offsets, mask=mask)
            tl.store(y_row + offsets, tl.exp(x - m) / total, mask=mask)


def softmax(x: Any, y: Any, rows: int, cols: int, sm_count: int) -> None:
    """y = softmax(x) along rows, on the current torch stream (row-major float32 tensors)."""
    if cols <= ONCHIP_MAX_COLS:
        block = max(32, triton.next_power_of_2(cols))
        warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
        softmax_row_kernel[(rows,)](x, y, rows, cols, BLOCK=block, num_warps=warps)
    else:
        grid = (min(rows, sm_count * WIDE_PROGRAMS_PER_SM),)
        softmax_online_kernel[grid](x, y, rows, cols, TILE=TILE, num_warps=WIDE_WARPS)


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """gpuprof's entry point: launch(stream) writes softmax(x) into the family's CuPy output
    (DLPack views, no copies) on gpuprof's CuPy stream."""
    t = _torch.torch()
    x, y = _torch.as_tensor(inputs["x"]), _torch.as_tensor(out)
    rows, cols = size["rows"], size["cols"]
    sm_count = t.cuda.get_device_properties(x.device).multi_processor_count

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):  # Triton launches on torch's current stream
            softmax(x, y, rows, cols, sm_count)

    return launch
