"""The network's parameters, the flat buffers' layout (parameters, gradients, updated weights) and
the step's FLOP and byte counts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from gpuprof.errors import UsageError

HIDDEN, CLASSES, IMAGE = 128, 10, 28
LR = 0.05
BN_EPS = 1e-5
MAX_BATCH = 16384  # the im2col workspace of block 2 (288 x batch*196 floats) stays under 2^31 elements

# (name, shape) in PyTorch module order; the flat buffers follow it.
PARAMETERS = (
    ("conv1.weight", (32, 1, 3, 3)), ("bn1.weight", (32,)), ("bn1.bias", (32,)),
    ("conv2.weight", (64, 32, 3, 3)), ("bn2.weight", (64,)), ("bn2.bias", (64,)),
    ("fc1.weight", (HIDDEN, 64 * 7 * 7)), ("fc1.bias", (HIDDEN,)),
    ("fc2.weight", (CLASSES, HIDDEN)), ("fc2.bias", (CLASSES,)),
)
ALIGN = 32  # floats: each parameter starts 128 bytes aligned (cuBLAS, vector loads)


def _round_up(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


@dataclass(frozen=True)
class Layout:
    """Offsets (in floats) of each parameter in the flat buffers, and of the output's three parts."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    padded: int  # length of one flat parameter buffer
    grads: int = ALIGN  # the loss sits at 0, padded to ALIGN

    @property
    def weights(self) -> int:
        return self.grads + self.padded

    @property
    def total(self) -> int:
        return self.weights + self.padded

    def segment(self, i: int) -> slice:
        return slice(self.offsets[i], self.offsets[i] + self.sizes[i])


@cache
def layout() -> Layout:
    offsets, sizes, at = [], [], 0
    for _name, shape in PARAMETERS:
        n = math.prod(shape)
        offsets.append(at)
        sizes.append(n)
        at += _round_up(n)
    return Layout(tuple(offsets), tuple(sizes), at)


def batch_of(size: dict[str, int]) -> int:
    n = int(size["batch"])
    if not 1 <= n <= MAX_BATCH:
        raise UsageError(f"mnist batch must be 1..{MAX_BATCH}; got {n}")
    return n


def flop(size: dict[str, int]) -> float:
    """Multiply-adds of the convs and linears, 2 FLOP each: forward once; backward twice (input and
    weight gradients) except conv1, whose input needs no gradient. Elementwise work is not counted."""
    n = batch_of(size)
    conv1 = 2.0 * n * 32 * IMAGE * IMAGE * 9
    conv2 = 2.0 * n * 64 * 14 * 14 * 32 * 9
    linear = 2.0 * n * (64 * 7 * 7 * HIDDEN + HIDDEN * CLASSES)
    return 2 * conv1 + 3 * conv2 + 3 * linear


def bytes_moved(size: dict[str, int]) -> float:
    """Parameters read, gradients written and read, updated weights written; the batch loaded; the
    conv outputs written once and read three times (statistics, pool, backward)."""
    n = batch_of(size)
    params = sum(layout().sizes)
    activations = n * (32 * IMAGE * IMAGE + 64 * 14 * 14)
    return 4.0 * (4 * params + n * IMAGE * IMAGE + 4 * activations) + 8.0 * n

