"""Sizes and launch geometry: parse --size, cap a size, grid dimensions from a variant's tile."""

from __future__ import annotations

import math

from gpuprof.errors import UsageError
from gpuprof.gpu import device_info
from gpuprof.results import size_label
from gpuprof.variants.catalog import Family, Variant, size_problem


def parse_size(family: Family, text: str | None) -> dict[str, int]:
    """'4096' or '4096x4096x4096' or 'm=4096,n=2048,k=512' -> a size in the family's dims."""
    if text is None:
        return dict(family.default_size)
    dims = family.dims
    usage = f"--size for {family.name} is {'x'.join(d.upper() for d in dims)} (e.g. {catalog_size_example(family)})"
    try:
        if "=" in text:
            pairs = {k.lower(): v for k, v in (p.split("=", 1) for p in text.replace(" ", "").split(","))}
            values = {d: _integer(pairs.pop(d)) for d in dims}
            if pairs:
                raise ValueError
        else:
            parts = [_integer(p) for p in text.lower().split("x")]
            if len(parts) == 1:
                parts = parts * len(dims)
            if len(parts) != len(dims):
                raise ValueError
            values = dict(zip(dims, parts))
    except (ValueError, KeyError, OverflowError):  # ValueError too for a 5000-digit number
        raise UsageError(f"bad size '{text[:40]}': {usage}") from None
    problem = size_problem(family, values)  # an extent below 1, a switch other than 0 or 1
    if problem:
        raise UsageError(f"bad size '{text}': {problem}; {usage}")
    for d, v in values.items():
        if v > 2**31 - 1:
            raise UsageError(f"bad size '{text[:40]}': {d} is over the 32-bit index limit of the kernels (2^31 - 1)")
    return values


def _integer(text: str) -> int:
    """'4096', '2^28' or '1e6' as an integer."""
    if "^" in text:
        base, _, exp = text.partition("^")
        if not 0 <= int(exp) <= 64:  # 2^100000000 would take minutes to compute, only to be refused
            raise OverflowError(exp)
        return int(base) ** int(exp)
    if "e" in text:
        value = float(text)
        if value != int(value):
            raise ValueError(text)
        return int(value)
    return int(text)


def catalog_size_example(family: Family) -> str:
    return size_label(family.default_size)


def clip(size: dict[str, int], cap: dict[str, int] | None) -> dict[str, int]:
    if not cap:
        return dict(size)
    return {d: min(v, cap.get(d, v)) for d, v in size.items()}


def grid_for(family: Family, variant: Variant, size: dict[str, int]) -> tuple[int, ...]:
    if variant.grid == "one":
        return (1,)
    if variant.grid == "expressions":
        return variant.grid_dims(family.dims, size)
    if variant.grid.startswith("per_sm:"):
        return (device_info().sm_count * variant.blocks_per_sm(),)
    return tuple(math.ceil(size[d] / t) for d, t in zip(family.grid_dims, variant.tile_dims()))
