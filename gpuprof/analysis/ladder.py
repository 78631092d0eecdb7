"""Pure: a family's variants as a ladder, each rung explained against the one before (docs/ladder.md).

Each rung carries its time and speedups, its traffic at each memory level, its instructions,
registers, spills, occupancy limiter and top stall reason (WarpStateStats' warp cycles, else
--source's samples), and the limiter ncu measured, judged against the limiter the manifest states
(`expected_limiter`, catalog.LIMITERS).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gpuprof.analysis import roofline
from gpuprof.analysis.stall_reasons import describe, top_reasons, warp_state_cycles
from gpuprof.parsers.ncu_metrics import NcuKernelRow

LATENCY_FRACTION = roofline.LATENCY_FRACTION  # the roofline's verdict and the ladder's limiter: one rule
LIMITER_OF_LEVEL = {"L1 pipe": "l1", "L1": "l1", "L2": "l2", "DRAM": "dram", "compute": "compute"}
ROOF_WORDS = {"L1 pipe": "the L1 data pipe roof", "L1": "the L1 roof", "L2": "the L2 roof", "DRAM": "the DRAM roof"}
INSTRUCTIONS = "smsp__inst_executed.sum"  # warp-level instructions executed
SPILLS = "sass__inst_executed_register_spilling"  # spill loads and stores (only in --set full)
CHANGE_FLOOR = 0.05  # relative changes smaller than this are not "what changed"
CHANGES_SHOWN = 3


@dataclass(frozen=True)
class Step:
    """One variant to put on the ladder: its rows, in manifest order."""

    label: str
    rows: Sequence[NcuKernelRow]
    expected_limiter: str | None = None  # catalog.LIMITERS; None: the manifest states none
    # samples by stall reason (--source): the top stall where the rows carry no WarpStateStats
    stalls: Mapping[str, float] | None = None
    reference: bool = False  # a vendor variant: the bar, not a rung the course climbs


@dataclass(frozen=True)
class Measured:
    """The limiter ncu's numbers show: the binding roof and how close the kernel comes to it."""

    limiter: str  # catalog.LIMITERS
    level: str  # "L1 pipe", "L1", "L2", "DRAM" or "compute"
    fraction: float  # achieved over the binding roof
    roof: str  # the binding roof in words

    @property
    def text(self) -> str:
        return f"{100 * self.fraction:.0f} % of {self.roof}"


@dataclass(frozen=True)
class Rung:
    label: str
    reference: bool
    time_ns: float | None
    speedup_vs_previous: float | None
    speedup_vs_first: float | None
    dram_bytes: float | None
    l2_bytes: float | None
    l1_bytes: float | None
    instructions: float | None
    registers: int | None
    spills: float | None
    occupancy_limiter: str | None
    top_stall: str | None  # "long scoreboard 41 %"
    expected_limiter: str | None
    measured_limiter: str | None
    measured: str  # "98 % of the L1 data pipe roof"; "" when the report has no roofline data
    verdict: str  # "confirmed", "refuted", "not stated" or "not measured"
    verdict_reason: str  # "expected dram, measured l1: 98 % of the L1 data pipe roof"
    changes: tuple[str, ...]  # the largest changes from the rung before, in words


def measured_limiter(label: str, rows: Sequence[NcuKernelRow]) -> Measured | None:
    """The binding roof of the hierarchical roofline; for kernels without FLOPs (a transpose),
    the busiest memory level; without the per-level counters, DRAM alone (SpeedOfLight's DRAM %).
    "latency" when the kernel reaches less than LATENCY_FRACTION of it."""
    point = roofline.level_point(label, list(rows))
    if point is not None:
        binding = point.binding
        level = "compute" if binding is None else binding.level
        roof = f"the {roofline.PRECISION_NAMES.get(point.precision, point.precision)} roof" if binding is None \
            else ROOF_WORDS[level]
        return _judged(level, point.fraction, roof)
    busy = _busy_levels(rows) or _dram_busy(rows)
    if not busy:
        return None
    level = max(busy, key=lambda name: busy[name])
    return _judged(level, busy[level], ROOF_WORDS.get(level, "the FP32 roof"))


def _judged(level: str, fraction: float, roof: str) -> Measured:
    limiter = "latency" if fraction < LATENCY_FRACTION else LIMITER_OF_LEVEL[level]
    return Measured(limiter, level, fraction, roof)


def _busy_levels(rows: Sequence[NcuKernelRow]) -> dict[str, float]:
    """Each memory level's traffic over its peak bandwidth, the rows' time-weighted mean."""
    timed = [(r.roofline_levels, r.duration_ns or 0.0) for r in rows
             if r.roofline_levels is not None and (r.duration_ns or 0.0) > 0]
    total = sum(d for _, d in timed)
    busy: dict[str, float] = {}
    for levels, d in timed:
        for level, rate in levels.traffic.items():
            peak = levels.bandwidth.get(level)
            if peak:
                busy[level] = busy.get(level, 0.0) + rate / peak * d / total
    return busy


def _dram_busy(rows: Sequence[NcuKernelRow]) -> dict[str, float]:
    """DRAM's busy share (SpeedOfLight) and the FP32 pipe's, time-weighted: the classic roofline's two roofs."""
    timed = [(r, r.duration_ns or 0.0) for r in rows if (r.duration_ns or 0.0) > 0]
    total = sum(d for _, d in timed)
    busy = {}
    if any(r.dram_throughput_pct is not None for r, _ in timed):
        busy["DRAM"] = sum((r.dram_throughput_pct or 0.0) / 100 * d for r, d in timed) / total
    if any(r.flop_fp32 and r.peak_fp32_flops for r, _ in timed):
        busy["compute"] = sum((r.flop_fp32 or 0.0) / (d * 1e-9) / r.peak_fp32_flops * d
                              for r, d in timed if r.peak_fp32_flops) / total
    return busy


def level_bytes(rows: Sequence[NcuKernelRow], level: str) -> float | None:
    """Bytes moved at one memory level: its rate times each launch's duration."""
    found = [(r.roofline_levels.traffic[level], r.duration_ns or 0.0) for r in rows
             if r.roofline_levels is not None and level in r.roofline_levels.traffic]
    return sum(rate * ns * 1e-9 for rate, ns in found) if found else None


def _metric_sum(rows: Sequence[NcuKernelRow], name: str) -> float | None:
    values = [v for r in rows if isinstance(v := r.metrics.get(name), (int, float))]
    return float(sum(values)) if values else None


def _total(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _verdict(expected: str | None, measured: Measured | None) -> tuple[str, str]:
    if expected is None:
        return "not stated", f"measured {measured.limiter}: {measured.text}" if measured else ""
    if measured is None:
        return "not measured", f"expected {expected}; the report has no roofline data"
    if measured.limiter == expected:
        return "confirmed", measured.text
    return "refuted", f"expected {expected}, measured {measured.limiter}: {measured.text}"


def build(steps: Sequence[Step]) -> list[Rung]:
    """One rung per step, in the order given (hand-written variants in manifest order, the vendor
    references last)."""
    rungs: list[Rung] = []
    for step in steps:
        rows = list(step.rows)
        time_ns = _total([r.duration_ns for r in rows])
        measured = measured_limiter(step.label, rows)
        verdict, reason = _verdict(step.expected_limiter, measured)
        registers = max((r.registers_per_thread for r in rows if r.registers_per_thread is not None), default=None)
        # each launch's limiter may itself be a tie ("registers+warps"): the rung names each part once
        limiters = list(dict.fromkeys(part for r in rows if r.occupancy_limiter
                                      for part in r.occupancy_limiter.split("+")))
        top = top_reasons(warp_state_cycles(rows) or step.stalls or {}, 1)
        rung = Rung(
            label=step.label, reference=step.reference, time_ns=time_ns,
            speedup_vs_previous=_ratio(rungs[-1].time_ns, time_ns) if rungs else None,
            speedup_vs_first=_ratio(rungs[0].time_ns, time_ns) if rungs else (1.0 if time_ns else None),
            dram_bytes=_total([r.dram_bytes for r in rows]), l2_bytes=level_bytes(rows, "L2"),
            l1_bytes=level_bytes(rows, "L1"), instructions=_metric_sum(rows, INSTRUCTIONS), registers=registers,
            spills=_metric_sum(rows, SPILLS), occupancy_limiter="+".join(limiters) or None,
            top_stall=f"{describe(top[0][0]).label} {top[0][1]:.0f} %" if top else None,
            expected_limiter=step.expected_limiter, measured_limiter=measured.limiter if measured else None,
            measured=measured.text if measured else "", verdict=verdict, verdict_reason=reason, changes=())
        if rungs:
            rung = _with_changes(rung, rungs[-1])
        rungs.append(rung)
    return rungs


def _ratio(before: float | None, after: float | None) -> float | None:
    return before / after if before and after else None


RATIO_FIGURES = (("time", "time_ns"), ("DRAM bytes", "dram_bytes"), ("L2 bytes", "l2_bytes"),
                 ("L1 bytes", "l1_bytes"), ("instructions", "instructions"))


def changes(before: Rung, after: Rung, shown: int = CHANGES_SHOWN) -> tuple[str, ...]:
    """The largest relative changes from one rung to the next, in words: "time ×0.31", "registers 32 → 128",
    "occupancy limiter registers → warps", "limiter l1 → compute". Time always comes first."""
    scored: list[tuple[float, str]] = []
    for figure, attr in RATIO_FIGURES:
        old, new = getattr(before, attr), getattr(after, attr)
        if old and new and abs(math.log(new / old)) >= math.log1p(CHANGE_FLOOR):
            scored.append((math.inf if attr == "time_ns" else abs(math.log(new / old)), f"{figure} ×{new / old:.2g}"))
    if before.registers and after.registers and before.registers != after.registers:
        scored.append((abs(math.log(after.registers / before.registers)),
                       f"registers {before.registers} → {after.registers}"))
    if before.spills != after.spills and (before.spills or after.spills):
        scored.append((1.0, f"spills {before.spills or 0:.0f} → {after.spills or 0:.0f}"))
    words = [text for _, text in sorted(scored, key=lambda st: -st[0])[:shown]]
    if before.occupancy_limiter and after.occupancy_limiter and before.occupancy_limiter != after.occupancy_limiter:
        words.append(f"occupancy limiter {before.occupancy_limiter} → {after.occupancy_limiter}")
    if before.measured_limiter and after.measured_limiter and before.measured_limiter != after.measured_limiter:
        words.append(f"limiter {before.measured_limiter} → {after.measured_limiter}")
    return tuple(words)


def _with_changes(rung: Rung, before: Rung) -> Rung:
    return replace(rung, changes=changes(before, rung))
