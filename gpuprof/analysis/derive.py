"""Pure: rates, % of ceiling, speedups and the physical floor of result rows.

Only rows that passed their check get a rate. A row is judged against the ceiling of its own
precision (analysis.ceilings); a median below the physical floor (the time the datasheet says
its bytes or FLOPs need at least) makes it IMPOSSIBLE: such a time cannot be the variant's work.
The figures are stored on the row (results.Derived): tables, JSON and `show` read them there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuprof.analysis.ceilings import Ceilings
from gpuprof.results import IMPOSSIBLE, OK, Derived, Row

# A median this much below the floor is IMPOSSIBLE. The margin absorbs datasheet rounding
# (3.35 TB/s is 3.352), an SM clock a little above the table's (the clock probe has read
# 1996 MHz on a 1980 MHz H100) and timer granularity; a real cheat is off by far more.
FLOOR_MARGIN = 0.05
L2_MODES = ("hot", "graph")  # L2 is warm between launches: inputs may be L2-resident

NOMINAL_FLOPS = ("not an FMA algorithm: FLOPs counted by the family's formula (direct convolution), "
                 "more than it executes")
L2_RESIDENT = "L2-resident data: hot/graph mode keeps the working set in L2 between launches"
L2_PARTIAL = "L2-resident data: outputs (up to one L2) can still sit in L2 when the timing ends"
LINK_DUPLEX = ("host-to-device and device-to-host copies overlapped: PCIe carries both directions at once, "
               "so the bytes of both can pass one direction's rate")
WITHIN_MARGIN = (f"above the datasheet peak but within the {FLOOR_MARGIN:.0%} margin of the floor: clocks above "
                 "the table's, datasheet rounding, or work not on the timed stream?")
BEYOND_MARGIN = (f"above the datasheet peak by more than the {FLOOR_MARGIN:.0%} margin: this time cannot be the "
                 "row's FLOPs at its precision (a wrong precision or FLOP count in the file, or work not timed)")


@dataclass(frozen=True)
class Floor:
    seconds: float
    why: str


def median_of(row: Row) -> float | None:
    if row.timing is None or row.timing.summary is None:
        return None
    return row.timing.summary.median_s


def rate_of(row: Row, rate_kind: str) -> float | None:
    """Work / median time. Speedups compare these rates, so rows at different sizes compare fairly."""
    if row.check.status != OK:
        return None
    work = row.flop if rate_kind == "flop" else row.bytes
    median = median_of(row)
    return work / median if work and median and median > 0 else None


def physical_floor(row: Row, ceilings: Ceilings | None, rate_kind: str = "bytes") -> Floor | None:
    """The least time the row's work can take on this GPU: its FLOPs at the datasheet peak of its
    precision, or its DRAM bytes at the datasheet bandwidth, whichever is longer. For rate kind
    "link" (bytes across the host link, the transfers family) the bytes floor is the link's instead:
    all of them at the datasheet rate in both directions at once (PCIe is full duplex).

    Bytes: the L2 flush of cold/cupti mode leaves no input in L2, but up to one L2 of output can
    still be there (dirty) when the end event is recorded, so bytes - L2 must cross DRAM; in
    hot/graph mode one L2 of inputs can also be resident, so bytes - 2·L2. A working set that fits
    has no bytes floor. FLOPs that are nominal (an FFT counted as direct convolution) have none."""
    if ceilings is None:
        return None
    floors: list[Floor] = []
    compute = ceilings.ceiling("flop", row.precision)
    if row.flop and row.flop_count == "executed" and compute:
        floors.append(Floor(row.flop / compute.value,
                            f"{row.flop:.3g} FLOP at the {compute.name} peak {compute.value / 1e12:.1f} TFLOP/s"))
    if rate_kind == "link":
        link = ceilings.link_bytes_s
        if row.bytes and link:
            floors.append(Floor(row.bytes / (2 * link), f"{row.bytes / 1e9:.3g} GB across the host link at "
                                f"{link / 1e9:.1f} GB/s each way, both directions at once"))
        return max(floors, key=lambda f: f.seconds, default=None)
    bandwidth = ceilings.bandwidth_bytes_s
    if row.bytes and bandwidth:
        mode = row.timing.mode if row.timing else "cold"
        resident = (2 if mode in L2_MODES else 1) * ceilings.l2_bytes
        dram = row.bytes - resident
        if dram > 0:
            held = f" ({resident / 2**20:.0f} MiB may stay in L2 in {mode} mode)" if resident else ""
            floors.append(Floor(dram / bandwidth,
                                f"{dram / 1e9:.3g} GB through DRAM{held} at {bandwidth / 1e12:.2f} TB/s"))
    return max(floors, key=lambda f: f.seconds, default=None)


def impossible_reason(row: Row, ceilings: Ceilings | None, margin: float = FLOOR_MARGIN,
                      rate_kind: str = "bytes") -> str | None:
    """Why the row's median cannot be its work (below the physical floor by more than the margin)."""
    median = median_of(row)
    floor = physical_floor(row, ceilings, rate_kind)
    if row.check.status != OK or median is None or floor is None or median >= floor.seconds * (1 - margin):
        return None
    return (f"median {median * 1e6:.4g} µs is below the physical floor {floor.seconds * 1e6:.4g} µs "
            f"({floor.why}, datasheet) by more than {margin:.0%}: the time cannot be this variant's work "
            "(work not on the timed stream, or skipped?)")


def judge(row: Row, ceilings: Ceilings | None, rate_kind: str) -> Row:
    """Mark a row IMPOSSIBLE when its median is below the physical floor, and store its own figures
    (rate, % of ceiling and which ceiling, floor) in row.derived; its speedups come once its table's
    rows are known (speedups)."""
    reason = impossible_reason(row, ceilings, rate_kind=rate_kind)
    if reason:
        row.check.status = IMPOSSIBLE
        row.check.reasons = [*row.check.reasons, reason]
    row.derived = figures(row, ceilings, rate_kind)
    return row


def derive(rows: list[Row], rate_kind: str, baseline: str | None, vendor: str | None,
           ceilings: Ceilings | None) -> list[Derived]:
    """Every figure of one table's rows, speedups included, stored on each row (row.derived) and
    returned in row order. Judges nothing: a row's status stays as it is."""
    for row in rows:
        row.derived = figures(row, ceilings, rate_kind)
    return speedups(rows, baseline, vendor)


def speedups(rows: list[Row], baseline: str | None, vendor: str | None) -> list[Derived]:
    """Store vs_baseline and vs_vendor on the figures of one table's rows: ratios of the rates
    already stored (= time ratios at equal sizes). A row without figures keeps none."""
    rates = {r.variant: r.derived.rate if r.derived else None for r in rows}
    base_rate = rates.get(baseline) if baseline else None
    vendor_rate = rates.get(vendor) if vendor else None
    out = []
    for row in rows:
        if row.derived is None:
            continue
        rate = row.derived.rate
        row.derived = replace(row.derived, vs_baseline=rate / base_rate if rate and base_rate else None,
                              vs_vendor=rate / vendor_rate if rate and vendor_rate else None)
        out.append(row.derived)
    return out


def figures(row: Row, ceilings: Ceilings | None, rate_kind: str) -> Derived:
    """The row's own figures (no speedups: those need its table, see speedups)."""
    rate = rate_of(row, rate_kind)
    ceiling = ceilings.ceiling(rate_kind, row.precision) if ceilings else None
    measured = ceilings.measured_ceiling(rate_kind, row.precision) if ceilings else None
    fraction = rate / ceiling.value if rate and ceiling else None
    floor = physical_floor(row, ceilings, rate_kind)
    return Derived(
        rate_kind=rate_kind, rate=rate, pct_of_ceiling=_pct(fraction),
        ceiling_name=ceiling.name if ceiling else None,
        ceiling_value=ceiling.value if ceiling else None,
        ceiling_source=ceiling.source if ceiling else None,
        pct_of_measured=_pct(rate / measured.value if rate and measured else None),
        measured_name=measured.name if measured else None,
        measured_source=measured.source if measured else None,
        measured_value=measured.value if measured else None,
        over_ceiling=_over_ceiling(row, rate_kind, fraction) if fraction and fraction > 1.0 else None,
        floor_s=floor.seconds if floor else None,
        floor=floor.why if floor else None,
    )


def _pct(fraction: float | None) -> float | None:
    return None if fraction is None else 100.0 * fraction


def _over_ceiling(row: Row, rate_kind: str, fraction: float) -> str:
    """Why a rate above its datasheet ceiling can still be honest (the row passed the floor), or,
    beyond the floor's margin, that it cannot be: the footnote never contradicts its own figure."""
    if rate_kind == "flop":
        if row.flop_count == "nominal":
            return NOMINAL_FLOPS
        return WITHIN_MARGIN if fraction <= 1 / (1 - FLOOR_MARGIN) else BEYOND_MARGIN
    if rate_kind == "link":
        return LINK_DUPLEX
    mode = row.timing.mode if row.timing else "cold"
    return L2_RESIDENT if mode in L2_MODES else L2_PARTIAL
