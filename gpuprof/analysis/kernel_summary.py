"""Pure: ncu's per-launch rows -> one summary per distinct kernel of a program, largest total time first."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpuprof.parsers.ncu_metrics import NcuAdvice, NcuKernelRow


@dataclass(frozen=True)
class KernelSummary:
    """Every profiled launch of one kernel (same demangled name), summed and averaged.

    Percentages and occupancy are means weighted by each launch's duration, so a long launch counts
    for what it costs; registers and the limiter come from the longest launch.
    """

    name: str  # demangled, as ncu printed it (full name: JSON and --wide)
    base_name: str  # function name without namespace, template arguments or parameters
    launches: int
    total_ns: float
    mean_ns: float
    share_pct: float  # of the summed duration of every profiled launch
    registers: int | None
    achieved_occupancy_pct: float | None
    theoretical_occupancy_pct: float | None
    sm_pct: float | None
    memory_pct: float | None
    limiter: str | None
    nvtx_range: str | None  # innermost push/pop range it ran in; several joined by ", "
    advice: tuple[NcuAdvice, ...]
    rows: tuple[NcuKernelRow, ...]
    impossible: tuple[str, ...] = ()  # its launches' impossible values (NcuKernelRow.impossible), left out


def summarize_kernels(rows: Iterable[NcuKernelRow]) -> list[KernelSummary]:
    groups: dict[str, list[NcuKernelRow]] = {}
    for row in rows:
        groups.setdefault(row.demangled_name, []).append(row)
    grand_total = math.fsum(r.duration_ns or 0.0 for members in groups.values() for r in members)
    out = [_summary(members, grand_total) for members in groups.values()]
    return sorted(out, key=lambda s: -s.total_ns)


def _summary(members: list[NcuKernelRow], grand_total: float) -> KernelSummary:
    total = math.fsum(r.duration_ns or 0.0 for r in members)
    timed = sum(1 for r in members if r.duration_ns is not None)  # a launch without a duration is not 0 ns
    longest = max(members, key=lambda r: r.duration_ns or 0.0)
    ranges = list(dict.fromkeys(r.nvtx_ranges[-1] for r in members if r.nvtx_ranges))
    return KernelSummary(
        name=longest.demangled_name,
        base_name=longest.kernel_name,
        launches=len(members),
        total_ns=total,
        mean_ns=total / timed if timed else 0.0,
        share_pct=100.0 * total / grand_total if grand_total > 0 else 0.0,
        registers=longest.registers_per_thread,
        achieved_occupancy_pct=duration_weighted(members, lambda r: r.achieved_occupancy_pct),
        theoretical_occupancy_pct=duration_weighted(members, lambda r: r.theoretical_occupancy_pct),
        sm_pct=duration_weighted(members, lambda r: r.sm_throughput_pct),
        memory_pct=duration_weighted(members, lambda r: r.memory_throughput_pct),
        limiter=longest.occupancy_limiter,
        nvtx_range=", ".join(ranges) or None,
        advice=_unique_advice(longest.advice),
        rows=tuple(members),
        impossible=tuple(f"ID {r.id}: {value}" for r in members for value in r.impossible),
    )


def duration_weighted(members: list[NcuKernelRow], value: Callable[[NcuKernelRow], float | None]) -> float | None:
    """value's mean over the launches, each weighted by its duration (a long launch counts for what
    it costs); the plain mean where no launch has a duration; None where none has the value."""
    pairs = [(v, r.duration_ns or 0.0) for r in members if (v := value(r)) is not None]
    if not pairs:
        return None
    weight = math.fsum(w for _, w in pairs)
    if weight <= 0:
        return math.fsum(v for v, _ in pairs) / len(pairs)
    return math.fsum(v * w for v, w in pairs) / weight


def _unique_advice(advice: tuple[NcuAdvice, ...]) -> tuple[NcuAdvice, ...]:
    seen: dict[tuple[str, str], NcuAdvice] = {}
    for a in advice:
        seen.setdefault((a.section, a.rule), a)
    return tuple(seen.values())
