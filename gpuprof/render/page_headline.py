"""The report page's headline: per family, its best rung against the vendor library, and the
geometric mean of those best rungs. Not a mean over every rung: the naive rungs are there to be
climbed from, and averaging them in says how slow the start was, not how far the ladder got."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuprof.analysis.speedup_summary import geometric_mean, rungs
from gpuprof.analysis.tables import Table
from gpuprof.commands.report import StoryReport
from gpuprof.render.page_ladder import rate_unit, throttled
from gpuprof.render.page_svg import number
from gpuprof.results import size_label


@dataclass(frozen=True)
class Best:
    family: str
    variant: str
    size: str
    rate: str  # "46.8 TFLOP/s"
    vendor: str | None
    vs_vendor: float | None
    throttled: str = ""  # "cublas: 1000/1000 throttled": samples of the two rows NVML saw clock-capped


@dataclass(frozen=True)
class Headline:
    best: list[Best]  # one per family with a rung that has a rate, in the page's order
    geomean: float | None  # of the best rungs' speedups over their vendor
    geomean_n: int
    note: str


def best_of(table: Table) -> Best | None:
    """The table's fastest rung (passed, not the vendor's) and how it stands against the vendor."""
    climbed = [r for r in rungs(table) if r.derived and r.derived.rate]
    if not climbed:
        return None
    row = max(climbed, key=lambda r: r.derived.rate if r.derived and r.derived.rate else 0.0)
    assert row.derived is not None and row.derived.rate is not None
    unit, scale = rate_unit(table.rate_kind)
    vendor = next((r for r in table.rows if r.vendor and r.variant == table.vendor), None)
    capped = [f"{r.variant}: {words}" for r in (row, vendor) if r is not None and (words := throttled(r))]
    return Best(table.family.name, row.variant, size_label(row.size), f"{number(row.derived.rate / scale)} {unit}",
                table.vendor, row.derived.vs_vendor, "; ".join(capped))


def headline(story: StoryReport) -> Headline:
    """Per family, the best rung of its largest table that has a vendor row (else of its largest table)."""
    best: list[Best] = []
    for tables in story.families().values():
        ranked = sorted(tables, key=lambda t: (t.vendor is None, -_work(t)))
        found = next((b for t in ranked if (b := best_of(t)) is not None), None)
        if found is not None:
            best.append(found)
    versus = [b.vs_vendor for b in best if b.vs_vendor]
    families = len(story.families())
    note = (f"{len(best)} of {families} families have a rung with a rate; {len(versus)} of them a vendor row to "
            "compare with. The geomean is over each family's best rung only, not over every rung.")
    return Headline(best, geometric_mean(versus), len(versus), note)


def _work(table: Table) -> float:
    return max((float(math.prod(r.size.values())) for r in table.rows if r.size), default=0.0)
