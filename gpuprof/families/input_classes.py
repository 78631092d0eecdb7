"""Structured inputs that make every element count: the check's answer to a kernel that estimates.

Random inputs from one distribution let a kernel that reads only part of its input pass: any
unbiased sample of 2^28 values uniform in [0, 1) sums to within ~1e-5 of the truth, far inside a
tolerance built for the rounding of 2^28 adds. A family whose output is a statistic of many inputs
(a sum, a prefix sum) declares INPUT_CLASSES in its Python, and the check launches the variant once
more per class and size on inputs of that class:

- "needles": every float input is zero except NEEDLES values at random positions (new positions
  at every launch, so over the launches they land at every offset within a cache line and every
  block's share), each a whole number in [NEEDLE_LOW, NEEDLE_HIGH). Their sum, and every prefix
  sum, is exact in FP32 whatever the order of the adds (whole numbers below 2^24), so an honest
  kernel meets the family's tolerance with room to spare, while a kernel that never reads some
  positions misses a needle (a skipped 1/16 of the input misses none of 128 needles with
  probability (15/16)^128, 3e-4) and one that scales a partial result inflates the exact answer
  (x 16/15 is 6.7 % off). Either is far outside any rounding tolerance.

The tolerance on needle inputs is the exact-sum model: for FP32 (and FP64) arithmetic the answer is
representable and every order of adds reaches it, so the bound is EXACT_TOLERANCE (a few units in
the last place of FP32, room for nothing but a final rounding), not the family's rounding model for
2^28 random adds. An estimator then fails unless its scaled guess hits the exact whole number.
Variants of a narrower precision keep the family's tolerance.

Classes that change the answer's scale in ways a family's error model does not cover (alternating
signs make a sum cancel to ~0, a relative error then measures nothing) are left to the families
that can judge them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

NEEDLES = 128
NEEDLE_LOW, NEEDLE_HIGH = 512, 1024  # 128 needles sum to < 2^17: exact in FP32, and one is >= 0.4 % of it
CLASSES = ("needles",)
EXACT_TOLERANCE = 2.0**-22  # 4 u of FP32: whole-number sums below 2^24 are exact in any order
EXACT_PRECISIONS = ("fp32", "fp64")


def tolerance(kind: str, family_tolerance: float, precision: str) -> float:
    """The bound on `kind` inputs for a variant of this arithmetic precision."""
    if kind == "needles" and precision in EXACT_PRECISIONS:
        return min(family_tolerance, EXACT_TOLERANCE)
    return family_tolerance


def describe(kind: str) -> str:
    """The class in words, for the row's reason ("on needle inputs: ...")."""
    return {"needles": f"needle inputs (zeros but {NEEDLES} whole numbers at random positions)"}[kind]


def apply(kind: str, inputs: dict[str, Any], seed: int) -> None:
    """Turn the float arrays among `inputs` into inputs of `kind`, in place (the launch closure may
    hold them). Non-float inputs (indices, labels) are left as drawn."""
    if kind not in CLASSES:
        raise ValueError(f"unknown input class {kind!r}; choose from: {', '.join(CLASSES)}")
    import numpy as np  # here, not at import: listing a family that names a class loads no NumPy

    rng = np.random.default_rng(seed)
    for array in inputs.values():
        if getattr(array, "dtype", None) is not None and array.dtype.kind == "f" and array.size:
            _needles(array, rng)


def _needles(array: Any, rng: np.random.Generator) -> None:
    import numpy as np

    from gpuprof.gpu import cupy

    xp = np if isinstance(array, np.ndarray) else cupy()
    count = min(array.size, NEEDLES)
    positions = rng.choice(array.size, size=count, replace=False)
    values = rng.integers(NEEDLE_LOW, NEEDLE_HIGH, size=count).astype(array.dtype)
    flat = array.reshape(-1)  # a view: the arrays the families make are contiguous
    flat[...] = 0
    flat[xp.asarray(positions)] = xp.asarray(values)
