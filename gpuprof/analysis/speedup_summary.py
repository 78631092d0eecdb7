"""Pure: the geometric-mean speedups of a run, per table and for the whole run, as KernelBench and
nsight-python summarise one.

A table's rungs are its rows that passed their check and are not the vendor's; its speedup over
the baseline rung is the geometric mean of those rungs' `vs_baseline` (the baseline itself, at 1x,
left out), its speedup over the vendor the geometric mean of their `vs_vendor`. The best rung is the
fastest of them. The run's figures are the geometric means over every table's rungs together.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpuprof.analysis.tables import Table
from gpuprof.results import OK, Row


@dataclass(frozen=True)
class Speedups:
    """Geometric means (None: no row to take one over) and how many rows each is over."""

    vs_baseline: float | None
    vs_baseline_n: int
    vs_vendor: float | None
    vs_vendor_n: int
    best: Row | None  # the fastest rung (highest vs_baseline, else vs_vendor)


def geometric_mean(values: Iterable[float]) -> float | None:
    kept = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    return math.exp(sum(math.log(v) for v in kept) / len(kept)) if kept else None


def rungs(table: Table) -> list[Row]:
    """The rows a learner climbs: passed, not the vendor's library."""
    return [r for r in table.rows if r.check.status == OK and not r.vendor and r.derived is not None]


def table_speedups(table: Table) -> Speedups:
    return _speedups([table])


def run_speedups(tables: Sequence[Table]) -> Speedups:
    return _speedups(tables)


def _speedups(tables: Sequence[Table]) -> Speedups:
    over_base: list[float] = []
    over_vendor: list[float] = []
    rows: list[Row] = []
    for table in tables:
        climbed = rungs(table)
        rows += climbed
        over_base += [r.derived.vs_baseline for r in climbed
                      if r.derived and r.derived.vs_baseline and r.variant != table.baseline]
        over_vendor += [r.derived.vs_vendor for r in climbed if r.derived and r.derived.vs_vendor]
    best = max(rows, key=lambda r: r.derived.vs_baseline or r.derived.vs_vendor or 0.0 if r.derived else 0.0,
               default=None)
    return Speedups(geometric_mean(over_base), len(over_base), geometric_mean(over_vendor), len(over_vendor), best)
