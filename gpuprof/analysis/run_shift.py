"""Run-level effects, pure: the shift common to a run's control rows, its SM clocks, and the
run-to-run spread of each row over several baseline runs (history).

A whole run can be slower for reasons that are not the code: another card of the same model, a
warmer room, a lower clock. Control rows (vendor libraries, rows a suite marks `control = true`)
do not change with the project's code, so their common change estimates that shift; rows are then
judged relative to it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from gpuprof.results import Results, Row

# A clock difference this large between two runs is worth a line of its own.
CLOCK_NOTE_FRACTION = 0.01


@dataclass(frozen=True, slots=True)
class LogChange:
    """log(median NEW / median BASE) with the distances of its interval below and above (log scale)."""

    row_id: str
    value: float
    below: float
    above: float


@dataclass(frozen=True)
class RunShift:
    """The change common to the controls, on the log scale (0 and no controls: not estimated)."""

    controls: tuple[str, ...] = ()
    log_shift: float = 0.0
    below: float = 0.0
    above: float = 0.0
    base_clock_mhz: float | None = None
    new_clock_mhz: float | None = None

    @property
    def estimated(self) -> bool:
        return bool(self.controls)

    @property
    def ratio(self) -> float:
        return math.exp(self.log_shift)

    def describe(self) -> str:
        """'the whole run is 2.4 % slower (2 controls, interval +1.9 % to +2.9 %): clocks 1755 vs 1980 MHz'."""
        clocks = self.clock_text()
        if not self.estimated:
            text = ("no control rows (vendor rows or suite rows marked control = true): the gate cannot tell "
                    "a whole-run shift (another card, clocks, temperature) from a regression")
            return f"{text}; {clocks}" if clocks else text
        pct = (self.ratio - 1) * 100
        word = "slower" if pct > 0 else "faster"
        low, high = (math.exp(self.log_shift - self.below) - 1) * 100, (math.exp(self.log_shift + self.above) - 1) * 100
        count = f"{len(self.controls)} control{'s' if len(self.controls) != 1 else ''}"
        text = (f"the whole run is {abs(pct):.1f} % {word} ({count}: {', '.join(self.controls)}; "
                f"interval {low:+.1f} % to {high:+.1f} %); rows are judged relative to it")
        return f"{text}; {clocks}" if clocks else text

    def clock_text(self) -> str:
        if self.base_clock_mhz is None or self.new_clock_mhz is None:
            return ""
        return f"clocks {self.new_clock_mhz:.0f} vs {self.base_clock_mhz:.0f} MHz (NEW vs BASE median SM clock)"

    def clocks_differ(self) -> bool:
        if self.base_clock_mhz is None or self.new_clock_mhz is None:
            return False
        return abs(self.new_clock_mhz / self.base_clock_mhz - 1) > CLOCK_NOTE_FRACTION


def is_control(row: Row) -> bool:
    return row.vendor or row.control


def median_clock_mhz(results: Results) -> float | None:
    """The median of every per-sample SM clock in the file; None when no row recorded one."""
    probed = [row.timing.sm_clock_mhz for row in results.rows if row.timing and len(row.timing.sm_clock_mhz)]
    clocks = np.concatenate([np.asarray(c, dtype=float) for c in probed]) if probed else np.empty(0)
    clocks = clocks[np.isfinite(clocks) & (clocks > 0)]
    return float(np.median(clocks)) if clocks.size else None


def estimate_shift(changes: Sequence[LogChange], alpha: float, base: Results | None = None,
                   new: Results | None = None) -> RunShift:
    """The common change of the controls and its interval.

    One control: its own change and interval. Two: their mean. Three or more: their median (one
    control that really changed cannot drag the others). With two or more, the interval is also at
    least as wide as the controls' disagreement with each other (their scatter).
    """
    base_clock = median_clock_mhz(base) if base else None
    new_clock = median_clock_mhz(new) if new else None
    if not changes:
        return RunShift(base_clock_mhz=base_clock, new_clock_mhz=new_clock)
    ids = tuple(c.row_id for c in changes)
    values = np.array([c.value for c in changes])
    below = np.array([c.below for c in changes])
    above = np.array([c.above for c in changes])
    k = len(changes)
    if k == 1:
        return RunShift(ids, float(values[0]), float(below[0]), float(above[0]), base_clock, new_clock)
    efficiency = 1.0 if k == 2 else math.sqrt(math.pi / 2)  # the median's standard error is ~1.25x the mean's
    centre = float(values.mean() if k == 2 else np.median(values))
    z = float(sps.norm.ppf(1 - alpha / 2))
    # Between-control scatter: the standard deviation for two, a robust one (1.4826 MAD) for more,
    # so one control that really changed widens nothing.
    scatter = float(values.std(ddof=1)) if k == 2 else 1.4826 * float(np.median(np.abs(values - centre)))
    spread = z * efficiency * scatter / math.sqrt(k)
    low = max(efficiency * math.sqrt(float((below ** 2).sum())) / k, spread)
    high = max(efficiency * math.sqrt(float((above ** 2).sum())) / k, spread)
    return RunShift(ids, centre, low, high, base_clock, new_clock)


@dataclass(frozen=True)
class History:
    """Run-to-run spread per row, from several BASE runs (each normalised by its controls' shift).

    sigma: the pooled standard deviation of log medians between runs; dof its degrees of freedom.
    medians: per row id, the median time in each BASE run (None where the row was not timed).
    """

    runs: int
    sigma: float | None
    dof: int
    row_sigma: dict[str, float] = field(default_factory=dict)
    medians: dict[str, list[float | None]] = field(default_factory=dict)

    def widening(self, alpha: float) -> float:
        """Log half-width the run-to-run spread adds to a NEW-vs-BASE interval: t * sigma * sqrt(2)
        (two runs, each with its own level)."""
        if self.sigma is None or self.dof < 1:
            return 0.0
        return float(sps.t.ppf(1 - alpha / 2, self.dof)) * self.sigma * math.sqrt(2)


def run_history(bases: Sequence[Results], timed_medians: Sequence[dict[str, float]]) -> History:
    """Spread of each row's log median over the BASE runs after removing each run's control shift.

    timed_medians[j] maps row id -> median seconds in bases[j] (rows ok and timed only). The last
    BASE is the reference the shifts are measured against.
    """
    runs = len(bases)
    ids = sorted({rid for medians in timed_medians for rid in medians})
    medians = {rid: [m.get(rid) for m in timed_medians] for rid in ids}
    if runs < 2:
        return History(runs, None, 0, {}, medians)
    reference = timed_medians[-1]
    controls = [{r.id for r in b.rows if is_control(r)} for b in bases]
    shifts = []
    for j, m in enumerate(timed_medians):
        common = [math.log(m[rid] / reference[rid]) for rid in m
                  if rid in reference and rid in controls[j] and rid in controls[-1]]
        shifts.append(float(np.median(common)) if common else 0.0)
    row_sigma, squares, dof = {}, 0.0, 0
    for rid in ids:
        logs = [math.log(m[rid]) - shifts[j] for j, m in enumerate(timed_medians) if m.get(rid)]
        if len(logs) < 2:
            continue
        variance = float(np.var(logs, ddof=1))
        row_sigma[rid] = math.sqrt(variance)
        squares += variance * (len(logs) - 1)
        dof += len(logs) - 1
    sigma = math.sqrt(squares / dof) if dof else None
    return History(runs, sigma, dof, row_sigma, medians)
