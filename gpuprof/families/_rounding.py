"""Rounding units for the family modules' error models (each module documents its own model in
tolerance(); tests/families/test_tolerances.py replays the orders of operations in float32 with numpy and
shows the margins both ways: correct orders pass, planted losses fail)."""

from __future__ import annotations

# Unit roundoff u (half an ulp of 1, round to nearest) of the arithmetic a variant declares with
# `precision`: the bound on one rounding's relative error.
UNIT_ROUNDOFF = {"fp64": 2.0**-53, "fp32": 2.0**-24, "tf32": 2.0**-11, "fp16": 2.0**-11, "bf16": 2.0**-8}
FP32 = UNIT_ROUNDOFF["fp32"]  # every family's buffers are FP32: the output is rounded to it at least once


def unit_roundoff(precision: str) -> float:
    return UNIT_ROUNDOFF[precision]
