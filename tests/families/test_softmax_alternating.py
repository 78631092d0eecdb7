"""Softmax on alternating rows (+a, -a, ...): a serial float32 sum's roundings lean one way, so honest
serial rungs reach cols*u/12, above the random-input bound cols*u/16 (the H200 flagged naive and
online at 1.04x and 1.3x of it). The alternating class's own bound, cols*u/4, lets the serial order
through with a 3x margin and still fails a sum taken from every other element."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof.families import input_classes, softmax
from gpuprof.families.interface import FamilyHost

U = 2.0**-24


def serial_softmax(x: np.ndarray) -> np.ndarray:
    """naive.cu's order in float32: the max, then one running sum of expf(x - max), then x * (1/sum)."""
    e = np.exp(x - x.max()).astype(np.float32)
    total = np.cumsum(e, dtype=np.float32)[-1]  # a sequential accumulation, as one thread adds
    return e * (np.float32(1) / total)


def strided_softmax(x: np.ndarray) -> np.ndarray:
    """The sum from every other element, doubled: an estimate."""
    e = np.exp(x - x.max()).astype(np.float32)
    return e / (2 * np.cumsum(e[::2], dtype=np.float32)[-1])


def error(y: np.ndarray, x: np.ndarray) -> float:
    e = np.exp(x.astype(np.float64) - x.max())
    ref = e / e.sum()
    return float(np.max(np.abs(y - ref) / np.abs(ref)))


def variant(model: str) -> SimpleNamespace:
    return SimpleNamespace(name="v", precision="fp32", error_model=model, defines={}, options={})


@pytest.mark.parametrize("cols", [4097, 50304, 1000003])
def test_a_serial_sum_passes_the_class_bound_and_an_estimate_does_not(cols):
    family_bound = softmax.tolerance(variant("serial"), {"rows": 1, "cols": cols})
    size = {"rows": 1, "cols": cols}
    bound = FamilyHost(softmax).class_tolerance(variant("serial"), size, "alternating", family_bound)
    worst = 0.0
    for a in range(1, input_classes.ALTERNATING_MAX + 1):
        x = np.where(np.arange(cols) % 2 == 0, a, -a).astype(np.float32)
        worst = max(worst, error(serial_softmax(x), x))
        assert error(strided_softmax(x), x) > 10 * bound
    assert family_bound < worst  # the random-input bound would flag the honest order (as the GPU did)
    assert worst < bound / 2  # the class bound keeps a margin
    assert worst == pytest.approx(cols * U / 12, rel=0.25)


def test_tree_rungs_and_other_classes_keep_their_bounds():
    size = {"rows": 1, "cols": 50304}
    assert FamilyHost(softmax).class_tolerance(variant("tree"), size, "alternating", 1e-5) == 1e-5
    assert FamilyHost(softmax).class_tolerance(variant("serial"), size, "spikes", 1e-5) == 1e-5
