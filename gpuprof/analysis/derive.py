"""Pure: rates, % of ceiling and speedups of result rows; only rows that passed their check get them."""

from __future__ import annotations

from dataclasses import dataclass

from gpuprof.analysis.ceilings import Ceilings
from gpuprof.results import OK, Row


@dataclass(frozen=True)
class Derived:
    row: Row
    rate: float | None  # FLOP/s or bytes/s, from the median
    rate_kind: str  # "flop" or "bytes"
    fraction_of_ceiling: float | None
    vs_baseline: float | None
    vs_vendor: float | None


def rate_of(row: Row, rate_kind: str) -> float | None:
    """Work / median time. Speedups compare these rates, so rows at different sizes compare fairly."""
    if row.check.status != OK or row.timing is None or row.timing.summary is None:
        return None
    work = row.flop if rate_kind == "flop" else row.bytes
    median = row.timing.summary.median_s
    return work / median if work and median > 0 else None


def derive(rows: list[Row], rate_kind: str, baseline: str | None, vendor: str | None,
           ceilings: Ceilings | None) -> list[Derived]:
    rates = {r.variant: rate_of(r, rate_kind) for r in rows}
    base_rate = rates.get(baseline) if baseline else None
    vendor_rate = rates.get(vendor) if vendor else None
    out = []
    for r in rows:
        rate = rates[r.variant]
        ceiling = ceilings.for_rate(rate_kind, r.precision) if ceilings else None
        out.append(Derived(
            row=r,
            rate=rate,
            rate_kind=rate_kind,
            fraction_of_ceiling=rate / ceiling if rate and ceiling else None,
            vs_baseline=rate / base_rate if rate and base_rate else None,
            vs_vendor=rate / vendor_rate if rate and vendor_rate else None,
        ))
    return out
