"""Run-level effects, pure: the shifts common to a run's control rows (the whole run's and one per
resource class), the controls that moved alone, the SM clocks, and the run-to-run spread of each
row over several baseline runs (history).

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

from gpuprof.analysis.resource_class import COMPUTE
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
class ClassShift:
    """The shift of one resource class (resource_class): from its own controls that the rest of the
    run confirms, else borrowed from the whole run (borrowed), else none (not estimated)."""

    resource: str
    controls: tuple[str, ...] = ()
    log_shift: float = 0.0
    below: float = 0.0
    above: float = 0.0
    borrowed: bool = False

    @property
    def estimated(self) -> bool:
        return bool(self.controls)


@dataclass(frozen=True)
class ControlFinding:
    """A control that moved on its own: neither the clocks, the other controls nor the rows of its
    class moved with it. It is reported by name and takes no part in any shift."""

    row_id: str
    resource: str
    log_change: float
    why: str

    def text(self, clocks: str) -> str:
        pct = (math.exp(self.log_change) - 1) * 100
        word = "slower" if pct > 0 else "faster"
        return (f"control {self.row_id} is {abs(pct):.1f} % {word} {clocks}, while {self.why}: a finding about "
                "that control, not a shift of the run; no row is judged against it")


@dataclass(frozen=True)
class RunShift:
    """The run's shifts on the log scale: the whole run's (from every confirmed control), one per
    resource class, and the controls that moved alone (findings). No controls: not estimated."""

    controls: tuple[str, ...] = ()
    log_shift: float = 0.0
    below: float = 0.0
    above: float = 0.0
    base_clock_mhz: float | None = None
    new_clock_mhz: float | None = None
    classes: tuple[ClassShift, ...] = ()
    findings: tuple[ControlFinding, ...] = ()
    uniform: bool = True  # every class with controls of its own moved as the whole run did

    @property
    def estimated(self) -> bool:
        return bool(self.controls)

    @property
    def ratio(self) -> float:
        return math.exp(self.log_shift)

    def for_class(self, resource: str) -> ClassShift:
        """The shift a row of this class is judged against: its class's own, else the whole run's."""
        for shift in self.classes:
            if shift.resource == resource and shift.estimated:
                return shift
        return ClassShift(resource, self.controls, self.log_shift, self.below, self.above, borrowed=self.estimated)

    def describe(self) -> str:
        """'every row, controls included, is 5.0 % slower at the same clock (2 controls: ...; interval ...)'."""
        clocks = self.clock_text()
        if not self.estimated:
            text = ("no control rows (vendor rows or suite rows marked control = true): the gate cannot tell "
                    "a whole-run shift (another card, clocks, temperature) from a regression")
            if self.findings:
                text = "no control row moved with the run: the gate cannot tell a whole-run shift from a regression"
            return f"{text}; {clocks}" if clocks else text
        interval = _interval(self.log_shift, self.below, self.above)
        if self.uniform and self.log_shift - self.below <= 0 <= self.log_shift + self.above:
            return (f"no whole-run shift {self.clock_phrase()}: {_named(self.controls)} moved "
                    f"{_moved(self.log_shift)} together, {interval}; rows are judged relative to it")
        who = "every row, controls included," if self.uniform else "the whole run (every confirmed control)"
        return (f"{who} is {_moved(self.log_shift)} {self.clock_phrase()}: {_named(self.controls)}; "
                f"{_interval(self.log_shift, self.below, self.above)}; rows are judged relative to it")

    def lines(self) -> list[str]:
        """describe(), then one line per class when the classes moved apart, then the findings."""
        out = [self.describe()]
        if not self.uniform:
            out += [f"{shift.resource}-bound rows: {_moved(shift.log_shift)}, {_named(shift.controls)}; "
                    f"{_interval(shift.log_shift, shift.below, shift.above)}; they are judged relative to it"
                    for shift in self.classes if shift.estimated]
        out += [finding.text(self.clock_phrase()) for finding in self.findings[:NAMED_CONTROLS]]
        if len(self.findings) > NAMED_CONTROLS:
            rest = self.findings[NAMED_CONTROLS:]
            out.append(f"and {len(rest)} more controls moved alone ({', '.join(f.row_id for f in rest[:2])} …; "
                       "--json lists every one): findings, not shifts")
        return out

    def clock_text(self) -> str:
        if self.base_clock_mhz is None or self.new_clock_mhz is None:
            return ""
        return f"clocks {self.new_clock_mhz:.0f} vs {self.base_clock_mhz:.0f} MHz (NEW vs BASE median SM clock)"

    def clock_phrase(self) -> str:
        if self.base_clock_mhz is None or self.new_clock_mhz is None:
            return "(no SM clock recorded)"
        if not self.clocks_differ():
            return f"at the same clock ({self.new_clock_mhz:.0f} MHz)"
        return f"while the SM clock went from {self.base_clock_mhz:.0f} to {self.new_clock_mhz:.0f} MHz"

    def clocks_differ(self) -> bool:
        if self.base_clock_mhz is None or self.new_clock_mhz is None:
            return False
        return abs(self.new_clock_mhz / self.base_clock_mhz - 1) > CLOCK_NOTE_FRACTION

    def over_limit(self, limit: float) -> list[str]:
        """--fail-on run-shift=PCT: the whole run, or a class with controls of its own, slower than
        limit (0.03 = 3 %) and really changed (its interval above 0)."""
        shifts = [("the whole run", self.controls, self.log_shift, self.below)]
        if not self.uniform:
            shifts += [(f"the {s.resource}-bound rows", s.controls, s.log_shift, s.below)
                       for s in self.classes if s.estimated]
        return [f"run shift: {who} {_moved(value)} {self.clock_phrase()} ({_named(ids)}), beyond the "
                f"{limit * 100:g} % that --fail-on run-shift allows"
                for who, ids, value, below in shifts
                if ids and math.exp(value) - 1 > limit and value - below > 0]


# A control names at most this many controls on a line, then counts the rest.
NAMED_CONTROLS = 3


def _named(ids: Sequence[str]) -> str:
    count = f"{len(ids)} control{'s' if len(ids) != 1 else ''}"
    shown = ", ".join(ids[:NAMED_CONTROLS])
    more = f" and {len(ids) - NAMED_CONTROLS} more" if len(ids) > NAMED_CONTROLS else ""
    return f"{count}: {shown}{more}"


def _moved(log_value: float) -> str:
    pct = (math.exp(log_value) - 1) * 100
    return f"{abs(pct):.1f} % {'slower' if pct > 0 else 'faster'}"


def _interval(centre: float, below: float, above: float) -> str:
    return f"interval {(math.exp(centre - below) - 1) * 100:+.1f} % to {(math.exp(centre + above) - 1) * 100:+.1f} %"


def is_control(row: Row) -> bool:
    return row.vendor or row.control


def median_clock_mhz(results: Results) -> float | None:
    """The run's SM clock: the median over rows of each row's median probed clock (finite, above 0),
    so every row weighs once whatever its sample count (and a lean load, which keeps only each row's
    median clock, gives the same); None when no row recorded one."""
    medians = []
    for row in results.rows:
        if row.timing is None or not len(row.timing.sm_clock_mhz):
            continue
        if len(row.timing.sm_clock_mhz) == 1:  # a lean load's one median clock: no numpy call per row
            clock = float(row.timing.sm_clock_mhz[0])
            if math.isfinite(clock) and clock > 0:
                medians.append(clock)
            continue
        clocks = np.asarray(row.timing.sm_clock_mhz, dtype=float)
        clocks = clocks[np.isfinite(clocks) & (clocks > 0)]
        if clocks.size:
            medians.append(float(np.median(clocks)))
    return float(np.median(medians)) if medians else None


def combine(changes: Sequence[LogChange], alpha: float) -> tuple[float, float, float]:
    """The common change of some controls and its interval (log scale: centre, below, above).

    One control: its own change and interval. Two: their mean. Three or more: their median (one
    control that really changed cannot drag the others). With two or more, the interval is also at
    least as wide as the controls' disagreement with each other (their scatter).
    """
    values = np.array([c.value for c in changes])
    below = np.array([c.below for c in changes])
    above = np.array([c.above for c in changes])
    k = len(changes)
    if k == 1:
        return float(values[0]), float(below[0]), float(above[0])
    efficiency = 1.0 if k == 2 else math.sqrt(math.pi / 2)  # the median's standard error is ~1.25x the mean's
    centre = float(values.mean() if k == 2 else np.median(values))
    z = float(sps.norm.ppf(1 - alpha / 2))
    # Between-control scatter: the standard deviation for two, a robust one (1.4826 MAD) for more,
    # so one control that really changed widens nothing.
    scatter = float(values.std(ddof=1)) if k == 2 else 1.4826 * float(np.median(np.abs(values - centre)))
    spread = z * efficiency * scatter / math.sqrt(k)
    low = max(efficiency * math.sqrt(float((below ** 2).sum())) / k, spread)
    high = max(efficiency * math.sqrt(float((above ** 2).sum())) / k, spread)
    return centre, low, high


def estimate_shift(controls: Sequence[tuple[LogChange, str]], alpha: float, min_effect: float,
                   rows_by_class: dict[str, list[float]] | None = None, base: Results | None = None,
                   new: Results | None = None) -> RunShift:
    """The run's shifts from its controls, each (change, resource class), robust to controls that
    moved on their own.

    1. In a class of three or more controls, one further than max(min effect, 3 robust sigma, its
       own interval) from the class median disagrees with its fellows: a finding.
    2. A class's remaining controls (two that disagree count one by one) are confirmed when their
       change agrees with the other controls' median (for compute-bound ones: with the SM clocks
       when those moved) or, failing that, when most of the class's other rows (rows_by_class: their
       raw log changes) are nearer to that change than to the other controls' one. Unconfirmed
       controls are findings: a cuBLAS 10 % slower at the same clock convicts and excuses nothing.
    3. Each class's shift comes from its confirmed controls; a class without any borrows the whole
       run's, which comes from every confirmed control.
    """
    base_clock = median_clock_mhz(base) if base else None
    new_clock = median_clock_mhz(new) if new else None
    clock_log = math.log(base_clock / new_clock) if base_clock and new_clock else 0.0
    clocks_moved = abs(clock_log) > CLOCK_NOTE_FRACTION
    rows_by_class = rows_by_class or {}
    findings: list[ControlFinding] = []
    by_class: dict[str, list[LogChange]] = {}
    for change, resource in controls:
        by_class.setdefault(resource, []).append(change)
    groups: list[tuple[str, list[LogChange]]] = []
    for resource, members in by_class.items():
        kept = members
        if len(members) >= 3:
            values = np.array([c.value for c in members])
            centre = float(np.median(values))
            scatter = 1.4826 * float(np.median(np.abs(values - centre)))
            agrees = [abs(c.value - centre) <= max(min_effect, 3 * scatter, c.below, c.above) for c in members]
            kept = [c for c, fine in zip(members, agrees) if fine]
            findings += [ControlFinding(c.row_id, resource, c.value,
                                        f"the other {len(members) - 1} {resource}-bound controls moved "
                                        f"{_moved(centre)}") for c, fine in zip(members, agrees) if not fine]
        if len(kept) == 2 and abs(kept[0].value - kept[1].value) > _tolerance(kept, min_effect):
            groups += [(resource, [kept[0]]), (resource, [kept[1]])]
        elif kept:
            groups.append((resource, kept))
    confirmed: list[tuple[str, LogChange]] = []
    for index, (resource, members) in enumerate(groups):
        centre = combine(members, alpha)[0]
        others = [c.value for j, (_, group) in enumerate(groups) if j != index for c in group]
        if resource == COMPUTE and clocks_moved:  # compute times follow the SM clock
            alternative, against = clock_log, "the SM clock did not move with it"
        else:
            alternative = float(np.median(others)) if others else 0.0
            against = f"the other controls moved {_moved(alternative)}" if others else "no other control moved"
        rows = rows_by_class.get(resource, [])
        support = sum(abs(r - centre) < abs(r - alternative) for r in rows)
        if abs(centre - alternative) <= _tolerance(members, min_effect) or not rows or 2 * support > len(rows):
            confirmed += [(resource, c) for c in members]
            continue
        why = f"{against} and {len(rows) - support} of the {len(rows)} other {resource}-bound rows did not either"
        findings += [ControlFinding(c.row_id, resource, c.value, why) for c in members]
    classes = []
    for resource in by_class:
        own = [c for r, c in confirmed if r == resource]
        if own:
            classes.append(ClassShift(resource, tuple(c.row_id for c in own), *combine(own, alpha)))
    if not confirmed:
        return RunShift(base_clock_mhz=base_clock, new_clock_mhz=new_clock, findings=tuple(findings))
    every = [c for _, c in confirmed]
    centre, below, above = combine(every, alpha)
    uniform = all(abs(s.log_shift - centre) <= max(min_effect / 2, s.below, s.above) for s in classes)
    order = {c.row_id: i for i, (c, _) in enumerate(controls)}
    ids = tuple(sorted((c.row_id for c in every), key=order.__getitem__))
    return RunShift(ids, centre, below, above, base_clock, new_clock, tuple(classes),
                    tuple(sorted(findings, key=lambda f: order[f.row_id])), uniform)


def _tolerance(members: Sequence[LogChange], min_effect: float) -> float:
    """How far a group of controls may be from another change and still agree with it (log)."""
    return max(min_effect, *(max(c.below, c.above) for c in members))


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
