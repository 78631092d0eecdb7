"""`gpuprof ncu FAMILY --ladder`: one row per rung, then one line per step up the ladder."""

from __future__ import annotations

from itertools import pairwise

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpuprof.analysis.ladder import Rung
from gpuprof.render import units
from gpuprof.render.fit import Column, fitted_table, print_table

COLUMNS = [
    Column("variant", justify="left"),
    Column("time"),
    Column("×prev"),
    Column("×first"),
    Column("expected", justify="left"),
    Column("measured", justify="left"),
    Column("verdict", justify="left"),
    Column("DRAM", priority=2),
    Column("L2", priority=4),
    Column("L1", priority=4),
    Column("inst", priority=3),
    Column("regs", priority=5),
    Column("spills", priority=7),
    Column("occ. limit", priority=6, justify="left"),
    Column("top stall", priority=5, justify="left"),
]


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}"


def ladder_table(rungs: list[Rung], width: int | None, title: str = "") -> Table:
    rows = [[rung.label + (" (ref)" if rung.reference else ""), units.seconds(rung.time_ns * 1e-9
                                                                              if rung.time_ns else None),
             _times(rung.speedup_vs_previous), _times(rung.speedup_vs_first), rung.expected_limiter or "-",
             rung.measured_limiter or "-", rung.verdict, units.nbytes(rung.dram_bytes), units.nbytes(rung.l2_bytes),
             units.nbytes(rung.l1_bytes), units.count(rung.instructions),
             "-" if rung.registers is None else str(rung.registers),
             units.count(rung.spills), rung.occupancy_limiter or "-", rung.top_stall or "-"] for rung in rungs]
    return fitted_table(COLUMNS, rows, width, title=title,
                        caption="×prev/×first: speedup over the rung before and over the first; "
                                "limiters: docs/ladder.md")


def step_lines(rungs: list[Rung]) -> list[str]:
    """ "rung 1 → 2 (naive → coalesced): time ×0.12, DRAM bytes ×0.5; expected l1: confirmed (98 % of …)" """
    lines = []
    for index, (before, after) in enumerate(pairwise(rungs), start=1):
        changed = ", ".join(after.changes) or "no figure changed by 5 % or more"
        judged = f"expected {after.expected_limiter}: {after.verdict}" if after.expected_limiter else after.verdict
        reason = f" ({after.verdict_reason})" if after.verdict_reason else ""
        lines.append(f"rung {index} → {index + 1} ({before.label} → {after.label}): {changed}; {judged}{reason}")
    return lines


def print_ladder(console: Console, rungs: list[Rung], wide: bool, title: str = "") -> None:
    print_table(console, ladder_table(rungs, None if wide else console.width, title), wide)
    if rungs:
        first = rungs[0]
        judged = f"expected {first.expected_limiter}: {first.verdict}" if first.expected_limiter else first.verdict
        reason = f" ({first.verdict_reason})" if first.verdict_reason else ""
        console.print(escape(f"rung 1 ({first.label}): {judged}{reason}"), soft_wrap=wide)
    for line in step_lines(rungs):
        console.print(escape(line), soft_wrap=wide)
