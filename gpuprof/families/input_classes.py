"""Structured inputs that make every element count: the check's answer to a kernel that estimates.

Random inputs from one distribution let a kernel that reads only part of its input pass: any
unbiased sample of 2^28 values uniform in [0, 1) sums to within ~1e-5 of the truth, far inside a
tolerance built for the rounding of 2^28 adds. A family whose output is a statistic of many inputs
(a sum, a prefix sum, a row's softmax or norm) declares INPUT_CLASSES in its Python (or
`input_classes` in an [op] table), and the check launches the variant once more per class and size
(the benchmark size included) on inputs of that class, in buffers of their own. Each class fills
the family's data inputs (its largest float arrays: weights, scales and indices keep their values)
and is judged by its own tolerance model (tolerance()):

- "needles": zeros except NEEDLES whole numbers in [NEEDLE_LOW, NEEDLE_HIGH) at random positions of
  the whole array (new positions at every launch: over the launches they land at every offset
  within a cache line and every block's share). A skipped 1/16 of the input misses none of 128
  needles with probability (15/16)^128 = 3e-4; a scaled partial result inflates the exact answer.
- "spikes": per row (the last axis), zeros except SPIKES_PER_ROW whole numbers in [SPIKE_LOW,
  SPIKE_HIGH). A row statistic taken from a sample misses them: a softmax whose max came from a
  sample computes exp(x - max) of ~100 and overflows, a norm whose mean and variance came from a
  sample divides by the wrong spread. The spikes are far above the zeros (exp(-96) underflows FP32),
  so these inputs are judged per row ("row" scale) where the family scales each element alone.
- "alternating": per row a whole magnitude a in [1, ALTERNATING_MAX], signs alternating along the
  row (+a, -a, ...): sums cancel to 0 or a, a mean is 0 and a variance a^2, so a statistic taken
  from every other element (a strided sample) is off by all of it.
- "constants": per row one whole number in [1, CONSTANT_MAX]: a softmax row is 1/cols everywhere.
- "heavy_tail": positive values |x| = U^(-1/HEAVY_ALPHA), clipped at HEAVY_MAX: a few values carry
  much of a sum, so a sample's estimate has a spread far beyond the rounding of the adds.

Tolerance models. A family whose output is sums of its inputs and nothing else (reduce, scan:
EXACT_SUMS = True) judges the classes of whole numbers with small partial sums ("needles",
"alternating") to EXACT_TOLERANCE: every order of FP32 adds reaches the exact answer, so the bound
is a few units in the last place, and an estimate fails unless its scaled guess hits the exact
whole number. Variants of a narrower precision, and every other class and family, keep the family's
own tolerance (its error model is for any values: the classes change the values, not the order of
the operations).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

NEEDLES = 128
NEEDLE_LOW, NEEDLE_HIGH = 512, 1024  # 128 needles sum to < 2^17: exact in FP32, and one is >= 0.4 % of it
SPIKES_PER_ROW = 2
SPIKE_LOW, SPIKE_HIGH = 96, 128  # exp(spike) overflows FP32 (> 88.7): a softmax that missed every spike
ALTERNATING_MAX = 8
CONSTANT_MAX = 8
HEAVY_ALPHA, HEAVY_MAX = 1.5, 4096.0  # Pareto tail: infinite variance before the clip
EXACT_TOLERANCE = 2.0**-22  # 4 u of FP32: whole-number sums below 2^24 are exact in any order
EXACT_PRECISIONS = ("fp32", "fp64")


@dataclass(frozen=True)
class InputClass:
    """One class: how it fills a data input (rows along the last axis), and how it is judged."""

    name: str
    words: str  # the row's reason: "on <words>: error ..."
    fill: Callable[[Any, Any, np.random.Generator], None]  # (xp, the input as rows x cols, rng)
    exact_sums: bool = False  # whole numbers whose sums are exact in FP32 in any order
    row_scale: bool = False  # judged per row where the family judges each element alone


def _needles(xp: Any, rows: Any, rng: np.random.Generator) -> None:
    flat = rows.reshape(-1)  # a view: the arrays the families make are contiguous
    count = min(flat.size, NEEDLES)
    positions = rng.choice(flat.size, size=count, replace=False)
    values = rng.integers(NEEDLE_LOW, NEEDLE_HIGH, size=count)
    flat[...] = 0
    flat[xp.asarray(positions)] = xp.asarray(values.astype(flat.dtype))


def _spikes(xp: Any, rows: Any, rng: np.random.Generator) -> None:
    count, cols = rows.shape
    rows[...] = 0
    for _ in range(min(SPIKES_PER_ROW, cols)):  # two draws may land on one place: then one spike
        columns = rng.integers(0, cols, size=count)
        values = rng.integers(SPIKE_LOW, SPIKE_HIGH, size=count).astype(rows.dtype)
        rows[xp.arange(count), xp.asarray(columns)] = xp.asarray(values)


def _alternating(xp: Any, rows: Any, rng: np.random.Generator) -> None:
    count, cols = rows.shape
    magnitude = xp.asarray(rng.integers(1, ALTERNATING_MAX + 1, size=(count, 1)).astype(rows.dtype))
    signs = xp.where(xp.arange(cols) % 2 == 0, 1, -1).astype(rows.dtype)
    rows[...] = magnitude * signs


def _constants(xp: Any, rows: Any, rng: np.random.Generator) -> None:
    rows[...] = xp.asarray(rng.integers(1, CONSTANT_MAX + 1, size=(rows.shape[0], 1)).astype(rows.dtype))


def _heavy_tail(xp: Any, rows: Any, rng: np.random.Generator) -> None:
    seed = int(rng.integers(2**63))
    if xp.__name__ == "numpy":
        uniform = xp.random.default_rng(seed).random(rows.shape, dtype=xp.float32)
    else:  # drawn where the families draw (families/_random.py): on the host under a sanitizer
        from gpuprof.families._random import generator

        uniform = generator(seed).random(rows.shape, dtype=xp.float32)
    rows[...] = xp.minimum((1 - uniform) ** (-1 / HEAVY_ALPHA), HEAVY_MAX)


_CLASSES = (
    InputClass("needles", f"needle inputs (zeros but {NEEDLES} whole numbers at random positions)", _needles,
               exact_sums=True),
    InputClass("spikes", f"spike inputs (each row zeros but {SPIKES_PER_ROW} whole numbers in "
                         f"[{SPIKE_LOW}, {SPIKE_HIGH}) at random columns)", _spikes, row_scale=True),
    InputClass("alternating", "alternating inputs (each row +a, -a, +a, ... for a whole a)", _alternating,
               exact_sums=True),
    InputClass("constants", "constant inputs (each row one whole number)", _constants),
    InputClass("heavy_tail", f"heavy-tailed inputs (Pareto {HEAVY_ALPHA:g}, up to {HEAVY_MAX:g})", _heavy_tail),
)
BY_NAME = {c.name: c for c in _CLASSES}
CLASSES = tuple(BY_NAME)


def get(kind: str) -> InputClass:
    if kind not in BY_NAME:
        raise ValueError(f"unknown input class {kind!r}; choose from: {', '.join(CLASSES)}")
    return BY_NAME[kind]


def tolerance(kind: str, family_tolerance: float, precision: str, exact_sums: bool = True) -> float:
    """The bound on `kind` inputs for a variant of this arithmetic precision; exact_sums: the family's
    output is sums of its inputs and nothing else (the family's EXACT_SUMS)."""
    if exact_sums and get(kind).exact_sums and precision in EXACT_PRECISIONS:
        return min(family_tolerance, EXACT_TOLERANCE)
    return family_tolerance


def error_scale(kind: str, family_scale: str) -> str:
    """How the check scales errors on `kind` inputs: the family's, except "row" for a class whose
    outputs span many orders of magnitude within a row when the family scales each element alone."""
    return "row" if get(kind).row_scale and family_scale == "element" else family_scale


def describe(kind: str) -> str:
    """The class in words, for the row's reason ("on needle inputs (...): ...")."""
    return get(kind).words


def data_inputs(inputs: dict[str, Any]) -> list[str]:
    """The inputs a class fills: the largest float arrays (the data; weights, scales, indices and
    labels keep the values they were drawn with)."""
    floats = {name: a for name, a in inputs.items()
              if getattr(a, "dtype", None) is not None and a.dtype.kind == "f" and a.size}
    largest = max((a.size for a in floats.values()), default=0)
    return [name for name, a in floats.items() if a.size == largest]


def apply(kind: str, inputs: dict[str, Any], seed: int) -> None:
    """Turn the data inputs among `inputs` into inputs of `kind`, in place (the launch closure may
    hold them)."""
    chosen = get(kind)
    import numpy as np  # here, not at import: listing a family that names a class loads no NumPy

    rng = np.random.default_rng(seed)
    for name in data_inputs(inputs):
        array = inputs[name]
        xp = np if isinstance(array, np.ndarray) else _cupy()
        rows = array.reshape(-1, array.shape[-1]) if array.ndim else array.reshape(1, 1)
        chosen.fill(xp, rows, rng)


def _cupy() -> Any:
    from gpuprof.gpu import cupy

    return cupy()
