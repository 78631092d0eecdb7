"""Pick one unit per quantity and format numbers for tables."""

from __future__ import annotations

import math


def seconds(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value / 1e-9:.4g} ns"


def rate(value: float | None, kind: str) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    if kind == "flop":
        return f"{value / 1e12:.2f} TFLOP/s"
    return f"{value / 1e9:.0f} GB/s"


def percent(value: float | None, digits: int = 1) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{100 * value:.{digits}f} %"


def ratio(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.3g}x" if value < 100 else f"{value:.0f}x"


def nbytes(value: float | None) -> str:
    """A byte count with a decimal prefix (ncu's units: 1 kB = 1000 B)."""
    return _scaled(value, (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)), " ", "B")


def count(value: float | None) -> str:
    """A count with a decimal prefix (instructions: 2.43G)."""
    return _scaled(value, (("G", 1e9), ("M", 1e6), ("k", 1e3)), "", "")


def _scaled(value: float | None, prefixes: tuple[tuple[str, float], ...], space: str, bare: str) -> str:
    if value is None:
        return "-"
    for unit, scale in prefixes:
        if value >= scale:
            return f"{value / scale:.3g}{space}{unit}"
    return f"{value:.0f}{space}{bare}".rstrip()

