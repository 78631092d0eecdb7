"""Constraints a family or a variant puts on the sizes it runs at (`require` in a manifest,
--require with --add): conditions such as "M % BM == 0" or "cols <= 1024" over the size symbols
(m, n, k and M, N, K) and the variant's defines (docs/constraints.md).

A check size that breaks them is replaced by the nearest size that keeps them (nearest_allowed);
a benchmark size that breaks them is not run (plan_check says why)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpuprof.errors import UsageError
from gpuprof.results import size_label
from gpuprof.variants.expressions import check_condition, condition_names, holds, size_symbols, split_top_level

# How far nearest_allowed looks from a dimension's value, each way, before it gives up on a size.
SEARCH_STEPS = 1 << 14
MAX_EXTENT = 2**31 - 1  # the kernels' 32-bit index limit (variants/sizes.py)


def split(text: str) -> list[str]:
    """'M%128==0,N%128==0, min(M,N) >= 1' -> each condition; commas inside parentheses stay (< and >
    are comparisons here, not brackets)."""
    return split_top_level(text, "(", ")")


def parse_option(text: str) -> tuple[str, ...]:
    """--require's value: conditions separated by commas, each checked (UsageError names it)."""
    conditions = tuple(split(text))
    for one in conditions:
        try:
            check_condition(one)
        except ValueError as exc:
            raise UsageError(f"bad --require '{text[:80]}': {exc}") from None
    return conditions


def unknown_names(requires: Iterable[str], known: Iterable[str]) -> list[str]:
    """The names the conditions use that are neither sizes nor defines, sorted."""
    allowed = set(known)
    return sorted({n for one in requires for n in condition_names(one)} - allowed)


def violations(requires: Iterable[str], dims: Iterable[str], size: dict[str, int],
               defines: dict[str, int]) -> list[str]:
    """The conditions that fail at this size (a condition that cannot be computed, e.g. % 0, fails)."""
    names = {**defines, **size_symbols(tuple(dims), size)}
    failed = []
    for one in requires:
        try:
            ok = holds(one, names)
        except ZeroDivisionError:
            ok = False
        if not ok:
            failed.append(one)
    return failed


def nearest_allowed(size: dict[str, int], requires: tuple[str, ...], dims: tuple[str, ...],
                    defines: dict[str, int], steps: int = SEARCH_STEPS) -> dict[str, int] | None:
    """The size nearest to `size` that keeps every condition, one dimension at a time in the
    family's order: a dimension keeps its value if it can, else takes the first allowed value above
    it (within `steps`), else the first below. A condition counts once every dimension it names is
    settled. None when no such size is within reach."""
    out = dict(size)
    for i, dim in enumerate(dims):
        settled = set(dims[:i + 1])
        mine = [c for c in requires if _dims_of(c, dims) <= settled and dim in _dims_of(c, dims)]
        if not mine:
            continue
        value = _nearest_value(out, dim, mine, dims, defines, steps)
        if value is None:
            return None
        out[dim] = value
    return out if not violations(requires, dims, out, defines) else None


def _dims_of(condition: str, dims: tuple[str, ...]) -> set[str]:
    names = condition_names(condition)
    return {d for d in dims if d in names or d.upper() in names}


def _nearest_value(size: dict[str, int], dim: str, requires: list[str], dims: tuple[str, ...],
                   defines: dict[str, int], steps: int) -> int | None:
    start = size[dim]
    up = range(start, min(start + steps, MAX_EXTENT) + 1)
    down = range(start - 1, max(start - steps, 1) - 1, -1)
    for candidate in (*up, *down):
        if not violations(requires, dims, {**size, dim: candidate}, defines):
            return candidate
    return None


@dataclass
class CheckPlan:
    """The sizes a variant is checked at, given its constraints: the family's check sizes (each
    replaced by its nearest allowed size where it breaks them) and the benchmark size last, or the
    reason the benchmark size is not run."""

    sizes: list[dict[str, int]] = field(default_factory=list)
    replaced: list[dict[str, dict[str, int]]] = field(default_factory=list)  # {"asked": ..., "checked": ...}
    notes: list[str] = field(default_factory=list)
    skip: str | None = None  # the benchmark size breaks them: the row is not run, and this says why


def plan_check(requires: tuple[str, ...], dims: tuple[str, ...], check_sizes: Iterable[dict[str, int]],
               bench: dict[str, int], defines: dict[str, int]) -> CheckPlan:
    """What the check does for a variant with these constraints (family's and its own)."""
    plan = CheckPlan()
    if not requires:
        plan.sizes = [*map(dict, check_sizes), dict(bench)]
        return plan
    broken = violations(requires, dims, bench, defines)
    if broken:
        plan.skip = f"not run: size {size_label(bench)} breaks the variant's constraint {_said(broken)}"
        return plan
    for size in check_sizes:
        plan_one(plan, requires, dims, dict(size), defines)
    plan.sizes.append(dict(bench))
    return plan


def plan_one(plan: CheckPlan, requires: tuple[str, ...], dims: tuple[str, ...], size: dict[str, int],
             defines: dict[str, int]) -> None:
    """One check size into the plan: as it is, replaced, or dropped (with a note)."""
    broken = violations(requires, dims, size, defines)
    nearest = nearest_allowed(size, requires, dims, defines) if broken else size
    if nearest is None:
        plan.notes.append(f"not checked at {size_label(size)}: no size near it meets {_said(broken)}")
        return
    if broken:
        plan.replaced.append({"asked": size, "checked": nearest})
        plan.notes.append(f"checked at {size_label(nearest)} in place of {size_label(size)} "
                          f"(requires {_said(broken)})")
    if nearest not in plan.sizes:
        plan.sizes.append(nearest)


def _said(conditions: list[str]) -> str:
    return ", ".join(c.replace(" ", "") for c in conditions)
