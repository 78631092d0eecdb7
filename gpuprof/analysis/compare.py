"""Pure comparison of results: per-row verdicts with reason codes, each row judged relative to the
shift of its resource class (run_shift, resource_class) when control rows exist, and the CI gate rule.

The presets and --fail-on are compare_presets', the median intervals order_stats', and the checks
that two files can be compared at all comparability's.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from scipy import stats as sps

from gpuprof.analysis.ceilings import Ceilings, from_environment
from gpuprof.analysis.comparability import environment_warnings, gpu_model_check, mismatch_check, rows_by_id
from gpuprof.analysis.compare_presets import DEFAULT_FAIL_ON, ComparePolicy, FailOn
from gpuprof.analysis.counter_gate import CounterChange, NewFinding, counter_changes, new_findings
from gpuprof.analysis.order_stats import median_ratio_interval, sorted_median
from gpuprof.analysis.resource_class import resource_class
from gpuprof.analysis.run_shift import History, LogChange, RunShift, estimate_shift, is_control, run_history
from gpuprof.errors import InputError
from gpuprof.results import OK, SKIPPED, Results, Row, SortedSamples


class Status(StrEnum):
    SAME = "SAME"
    FASTER = "FASTER"
    SLOWER = "SLOWER"
    INCONCLUSIVE = "INCONCLUSIVE"
    WRONG = "WRONG"


class Reason(StrEnum):
    CLEAR_GAP = "clear_gap"  # interval beyond the min effect and Mann–Whitney agrees
    WITHIN_NOISE = "within_noise"  # interval inside ±min effect, no detectable difference
    BELOW_MIN_EFFECT = "below_min_effect"  # a real difference, but all of it smaller than the min effect
    OVERLAPPING = "overlapping"  # interval crosses the min-effect limit: cannot tell
    TESTS_DISAGREE = "tests_disagree"  # medians apart, but the rank test sees no shift
    TOO_FEW_SAMPLES = "too_few_samples"
    NOT_TIMED = "not_timed"
    BASE_WRONG = "base_wrong"  # fixed since BASE: nothing trustworthy to compare with
    WRONG_RESULT = "wrong_result"  # wrong in NEW and not ok in BASE either
    NEWLY_WRONG = "newly_wrong"  # ok in BASE, wrong in NEW: a failure
    UNTIMED_IN_NEW = "untimed_in_new"  # timed in BASE, no samples in NEW: fails by default
    SKIPPED_IN_NEW = "skipped_in_new"  # NEW skipped for environment reasons (e.g. PyTorch missing)
    CONTROL = "control"  # its class's only control row: it defines the shift, so it cannot be judged by it
    CONTROL_MOVED = "control_moved"  # a control that moved alone: a finding, not a shift (--fail-on control)


@dataclass(frozen=True, slots=True)  # slots: an 18k-row report holds 18k of them
class Verdict:
    """The decision for one row id; times in seconds.

    ratio is what the verdict judges: median(NEW) / median(BASE) divided by the run's common shift
    when controls exist (raw_ratio keeps the plain quotient); ci_low/ci_high bound ratio;
    resolution is the interval's larger relative half-width (coarse when above the min effect).
    """

    row_id: str
    status: Status
    reason: Reason
    detail: str
    base_median_s: float | None = None
    new_median_s: float | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    raw_ratio: float | None = None
    resolution: float | None = None
    control: bool = False
    resource: str | None = None  # resource_class: the class whose shift the row is judged against


@dataclass(frozen=True)
class CompareReport:
    policy: ComparePolicy
    verdicts: list[Verdict]
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    base_label: str = "BASE"
    new_label: str = "NEW"
    resized: list[tuple[str, str]] = field(default_factory=list)  # (BASE id, NEW id): same variant, other size
    shift: RunShift = field(default_factory=RunShift)
    history: History | None = None
    fail_on: frozenset[FailOn] = DEFAULT_FAIL_ON
    new_medians: dict[str, float] = field(default_factory=dict)  # for trends and exports
    run_shift_limit: float | None = None  # --fail-on run-shift=PCT, as a fraction
    counters: list[CounterChange] = field(default_factory=list)  # counters of `--with ncu` that grew
    findings: list[NewFinding] = field(default_factory=list)  # sanitizer findings new in NEW: always fail

    def counts(self) -> dict[Status, int]:
        return {s: sum(v.status is s for v in self.verdicts) for s in Status}

    def coarse(self) -> list[Verdict]:
        """Rows whose interval is wider than the min effect: they can never be called SAME."""
        return [v for v in self.verdicts if v.resolution is not None and v.resolution > self.policy.min_effect]

    @property
    def removed_only(self) -> list[str]:
        """Removed rows that are not one side of a resize."""
        resized = {b for b, _ in self.resized}
        return [rid for rid in self.removed if rid not in resized]

    @property
    def added_only(self) -> list[str]:
        resized = {n for _, n in self.resized}
        return [rid for rid in self.added if rid not in resized]


# Reasons that mean "the gate could not decide" (a fix since BASE is not among them).
UNDECIDED = {Reason.OVERLAPPING, Reason.TESTS_DISAGREE, Reason.NOT_TIMED}


def is_failure(verdict: Verdict, fail_on: frozenset[FailOn] = DEFAULT_FAIL_ON) -> bool:
    """SLOWER and newly WRONG always fail, except a control's change (a finding, failing only with
    --fail-on control); untimed, too few samples, inconclusive and skipped rows as fail_on says."""
    if verdict.reason is Reason.NEWLY_WRONG:
        return True
    if verdict.control and verdict.status in (Status.SLOWER, Status.FASTER):
        return verdict.reason is Reason.CONTROL_MOVED and FailOn.CONTROL in fail_on
    if verdict.status is Status.SLOWER:
        return True
    if verdict.reason is Reason.UNTIMED_IN_NEW:
        return FailOn.UNTIMED in fail_on
    if verdict.reason is Reason.TOO_FEW_SAMPLES:
        return FailOn.TOO_FEW in fail_on
    if verdict.reason is Reason.SKIPPED_IN_NEW:
        return FailOn.MISSING in fail_on
    return verdict.status is Status.INCONCLUSIVE and verdict.reason in UNDECIDED and FailOn.INCONCLUSIVE in fail_on


def file_problems(report: CompareReport) -> list[str]:
    """Why NEW as a whole cannot pass: no rows, no row in common with BASE, or (with untimed rows
    failing, the default) not one row timed where BASE was. Nothing judged is never 'no regression'."""
    new_rows = len(report.verdicts) + len(report.added)
    base_rows = len(report.verdicts) + len(report.removed)
    if new_rows == 0:
        return [f"{report.new_label} has no rows: nothing was compared with {report.base_label}'s {base_rows}"]
    if not report.verdicts:
        return [(f"no row in common: none of {report.new_label}'s {new_rows} rows is in {report.base_label} "
                 f"({base_rows} rows); nothing was compared (other families, variants or sizes?)")]
    untimed = [v for v in report.verdicts if v.reason is Reason.UNTIMED_IN_NEW]
    timed_in_base = [v for v in report.verdicts if v.base_median_s is not None]
    if untimed and len(untimed) == len(timed_in_base) and FailOn.UNTIMED in report.fail_on:
        named = ", ".join(v.row_id for v in untimed[:3]) + (" …" if len(untimed) > 3 else "")
        return [(f"no row of {report.new_label} was timed (untimed_in_new): all {len(untimed)} rows timed in "
                 f"{report.base_label} have no samples in it ({named}); a --check-only run? a host sync? a hang?")]
    return []


def gate(report: CompareReport) -> list[str]:
    """The failure reasons, one line each; an empty list means the gate passes. Problems of NEW as a
    whole come first (file_problems); an all-untimed NEW is that one line, not one line per row."""
    whole = file_problems(report)
    all_untimed = bool(whole) and bool(report.verdicts)
    lines = whole + [f"{v.row_id} {v.status.value} ({v.reason.value}): {v.detail}"
                     for v in report.verdicts if is_failure(v, report.fail_on)
                     and not (all_untimed and v.reason is Reason.UNTIMED_IN_NEW)]
    if FailOn.RUN_SHIFT in report.fail_on and report.run_shift_limit is not None:
        lines += report.shift.over_limit(report.run_shift_limit)
    lines += [f.line() for f in report.findings]
    if FailOn.COUNTERS in report.fail_on:
        lines += [c.line() for c in report.counters]
    if FailOn.MISSING in report.fail_on:
        lines += [f"{rid} removed: in {report.base_label}, not in {report.new_label}" for rid in report.removed_only]
        lines += [f"{b} resized to {n}: not compared" for b, n in report.resized]
    return lines


@dataclass(frozen=True)
class JudgingRule:
    """What every row of one compare is judged by: the preset's thresholds, relative to the shift of
    the row's resource class (ceilings: BASE's, to tell a row's class), each interval widened by the
    run-to-run spread that history gives (log scale)."""

    policy: ComparePolicy
    shift: RunShift = field(default_factory=RunShift)
    widen: float = 0.0
    ceilings: Ceilings | None = None


@dataclass(frozen=True, slots=True)  # slots: one per timed row of an 18k-row compare
class RowSamples:
    """One row's samples in BASE and NEW, sorted (as _samples gives them), with what compare_results
    computed from them once: their log change and the batched rank test's p-value (None: computed
    when the row is judged)."""

    base: np.ndarray
    new: np.ndarray
    change: LogChange | None = None
    p_value: float | None = None
    resource: str | None = None


def compare_results(
    base: Results,
    new: Results,
    policy: ComparePolicy,
    *,
    allow_different_gpu: bool = False,
    allow_mismatch: bool = False,
    fail_on: frozenset[FailOn] = DEFAULT_FAIL_ON,
    history: Sequence[Results] = (),
    base_label: str = "BASE",
    new_label: str = "NEW",
    run_shift_limit: float | None = None,
) -> CompareReport:
    """Verdicts for the rows in both files (in NEW's order), judged relative to the controls' common
    shift; plus added, removed and resized ids, the shift, the history and warnings.

    history: earlier BASE runs (oldest first); with them each row's run-to-run spread widens its
    interval, so a row that wobbles between runs needs a larger change to be called SLOWER.
    """
    warnings = environment_warnings(base, new, allow_different_gpu, base_label, new_label)
    base_rows, new_rows = rows_by_id(base, base_label), rows_by_id(new, new_label)
    common = [rid for rid in new_rows if rid in base_rows]  # ids once: Row.id formats the size each call
    pairs = [(base_rows[rid], new_rows[rid]) for rid in common]
    warnings += gpu_model_check(pairs, base, new, allow_different_gpu)
    warnings += mismatch_check(pairs, allow_mismatch)
    for rid, row in new_rows.items():
        if rid not in base_rows and row.check.status != OK:
            warnings.append(f"{rid}: added in {new_label} with check status {row.check.status!r}")
    # Each row's sorted samples once: an 18k-row compare spent seconds re-sorting them per use.
    new_sorted = {rid: _samples(row) for rid, row in new_rows.items() if row.check.status == OK}
    samples = {rid: (_samples(b), new_sorted[rid]) for rid, (b, n) in zip(common, pairs)
               if b.check.status == OK and n.check.status == OK}
    judged = {rid: s for rid, s in samples.items() if min(s[0].size, s[1].size) >= policy.min_samples}
    changes = {rid: _log_change(rid, b, n, policy.alpha) for rid, (b, n) in judged.items()}
    ceilings = from_environment(base.environment)
    resources = {rid: resource_class(n, ceilings) for rid, (_, n) in zip(common, pairs) if rid in samples}
    controls: list[tuple[LogChange, str]] = []
    rows_by_class: dict[str, list[float]] = {}
    for rid, (b, n) in zip(common, pairs):
        if rid in changes and is_control(b) and is_control(n):
            controls.append((changes[rid], resources[rid]))
        elif rid in changes:
            rows_by_class.setdefault(resources[rid], []).append(changes[rid].value)
    shift = estimate_shift(controls, policy.alpha, policy.min_effect, rows_by_class, base, new)
    for earlier in history:
        if earlier.environment.get("gpu_name") != base.environment.get("gpu_name") and not allow_different_gpu:
            raise InputError(f"a history BASE ran on {earlier.environment.get('gpu_name')!r}, the baseline on "
                             f"{base.environment.get('gpu_name')!r}; their spread says nothing about one GPU model "
                             "(pass --allow-different-gpu to use it anyway)")
    past = _history([*history, base], policy) if history else None
    widen = past.widening(policy.alpha) if past else 0.0
    scales = {rid: math.exp(-shift.for_class(resource).log_shift) for rid, resource in resources.items()}
    p_values = _rank_test_batch(samples, scales)
    rule = JudgingRule(policy, shift, widen, ceilings)
    timed = {rid: RowSamples(b, n, changes.get(rid), p_values.get(rid), resources[rid])
             for rid, (b, n) in samples.items()}
    verdicts = [compare_row(b, n, rule, timed.get(rid)) for rid, (b, n) in zip(common, pairs)]
    if shift.clocks_differ() and not shift.estimated:
        warnings.append(f"{shift.clock_text()}: without control rows a SLOWER row may be the clock, not the code")
    removed = [rid for rid in base_rows if rid not in new_rows]
    added = [rid for rid in new_rows if rid not in base_rows]
    judged_pairs = [(rid, b, n) for rid, (b, n) in zip(common, pairs)]  # the counter gate's
    return CompareReport(
        policy=policy, verdicts=verdicts, added=added, removed=removed, warnings=warnings,
        base_label=base_label, new_label=new_label, resized=_resized(removed, added, base_rows, new_rows),
        shift=shift, history=past, fail_on=fail_on,
        new_medians={rid: sorted_median(s) for rid, s in new_sorted.items() if s.size}, run_shift_limit=run_shift_limit,
        counters=counter_changes(judged_pairs), findings=new_findings(judged_pairs),
    )


def _history(bases: list[Results], policy: ComparePolicy) -> History:
    medians = []
    for results in bases:
        timed = {}
        for row in results.rows:
            s = _samples(row)
            if row.check.status == OK and s.size:
                timed[row.id] = sorted_median(s)
        medians.append(timed)
    return run_history(bases, medians)


def _log_change(rid: str, base_s: np.ndarray, new_s: np.ndarray, alpha: float) -> LogChange:
    low, high = median_ratio_interval(base_s, new_s, alpha)
    value = math.log(sorted_median(new_s) / sorted_median(base_s))
    return LogChange(rid, value, value - math.log(low), math.log(high) - value)


def _resized(removed: list[str], added: list[str], base_rows: dict[str, Row],
             new_rows: dict[str, Row]) -> list[tuple[str, str]]:
    """Removed and added rows of one (family, variant): the size changed, so nothing is compared."""
    by_variant = {(new_rows[rid].family, new_rows[rid].variant): rid for rid in added}
    return [(rid, by_variant[key]) for rid in removed
            if (key := (base_rows[rid].family, base_rows[rid].variant)) in by_variant]


def compare_row(base_row: Row, new_row: Row, rule: JudgingRule, samples: RowSamples | None = None) -> Verdict:
    """Correctness first (a wrong result has no meaningful time), then the timing decision.
    samples: the row's RowSamples when compare_results computed them; without them the row's
    samples are sorted, and its log change and rank test computed, here."""
    rid = new_row.id
    control = is_control(new_row)
    if new_row.check.status == SKIPPED and base_row.check.status != SKIPPED:
        reasons = "; ".join(new_row.check.reasons[:1])
        detail = "skipped in NEW (an environment problem, not a wrong result)" + (f": {reasons}" if reasons else "")
        return Verdict(rid, Status.INCONCLUSIVE, Reason.SKIPPED_IN_NEW, detail, control=control)
    if new_row.check.status != OK:
        return _wrong_verdict(rid, base_row, new_row)
    if base_row.check.status != OK:
        return Verdict(rid, Status.INCONCLUSIVE, Reason.BASE_WRONG,
                       f"fixed: check was {base_row.check.status!r} in BASE, so BASE has no trustworthy time",
                       control=control)
    samples = samples if samples is not None else RowSamples(_samples(base_row), _samples(new_row))
    base_s, new_s, policy = samples.base, samples.new, rule.policy
    if new_s.size == 0 and base_s.size > 0:
        why = f" (stopped: {new_row.timing.stop_reason})" if new_row.timing and new_row.timing.stop_reason else ""
        return Verdict(rid, Status.INCONCLUSIVE, Reason.UNTIMED_IN_NEW,
                       f"timed in BASE but no samples in NEW{why}; a launch that blocks the host "
                       "(a sync, .item()) ends like this", sorted_median(base_s), control=control)
    if base_s.size == 0 or new_s.size == 0:
        return Verdict(rid, Status.INCONCLUSIVE, Reason.NOT_TIMED, "BASE has no timing samples", control=control)
    if min(base_s.size, new_s.size) < policy.min_samples:
        return Verdict(rid, Status.INCONCLUSIVE, Reason.TOO_FEW_SAMPLES,
                       f"too few samples: {base_s.size} in BASE, {new_s.size} in NEW; preset {policy.name} "
                       f"needs at least {policy.min_samples} on each side to judge a change",
                       sorted_median(base_s), sorted_median(new_s), control=control)
    resource = samples.resource or resource_class(new_row, rule.ceilings)
    return _timing_verdict(rid, samples, rule, control, resource)


# Rows with more samples than this per side get their rank test in one vectorised call: scipy's
# 'auto' method is then asymptotic for every row anyway, so batching gives the same p-values.
_BATCH_MIN_SAMPLES = 9
_BATCH_ROWS = 1024
# And at most about this many samples per call: scipy's rank test makes several temporaries of the
# whole batch (1024 rows of 1000 samples a side took ~130 MB).
_BATCH_SAMPLES = 1 << 17


def _rank_test_batch(samples: dict[str, tuple[np.ndarray, np.ndarray]],
                     new_scale: dict[str, float] | None = None) -> dict[str, float]:
    """Mann–Whitney p-values of many rows at once (one scipy call per pair of sample counts): an
    18k-row compare spent most of its time in scipy's per-call overhead. samples: row id -> (BASE,
    NEW) _samples of rows ok in both; new_scale (row id -> factor, 1 where absent) removes the row's
    class shift from NEW's samples, as the per-row test does."""
    new_scale = new_scale or {}
    groups: dict[tuple[int, int], list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for rid, (base_s, new_s) in samples.items():
        if min(base_s.size, new_s.size) >= _BATCH_MIN_SAMPLES:
            groups.setdefault((new_s.size, base_s.size), []).append((rid, new_s, base_s))
    out: dict[str, float] = {}
    for (n_new, n_base), members in groups.items():
        step = max(2, min(_BATCH_ROWS, _BATCH_SAMPLES // (n_new + n_base)))  # chunks bound scipy's temporaries
        for start in range(0, len(members), step):
            chunk = members[start:start + step]
            if len(chunk) < 2:
                continue
            factors = np.array([new_scale.get(m[0], 1.0) for m in chunk])[:, None]
            news = np.stack([m[1] for m in chunk]) * factors  # elementwise: as scaling each row
            bases = np.stack([m[2] for m in chunk])
            pvalues = sps.mannwhitneyu(news, bases, alternative="two-sided", method="asymptotic", axis=1).pvalue
            out.update((m[0], float(p)) for m, p in zip(chunk, np.atleast_1d(pvalues)))
    return out


def _wrong_verdict(rid: str, base_row: Row, new_row: Row) -> Verdict:
    reasons = "; ".join(new_row.check.reasons[:2])
    status = new_row.check.status
    if base_row.check.status == OK:
        detail = f"check {status!r} in NEW, was ok in BASE" + (f": {reasons}" if reasons else "")
        return Verdict(rid, Status.WRONG, Reason.NEWLY_WRONG, detail)
    detail = f"check {status!r} in NEW and {base_row.check.status!r} in BASE" + (f": {reasons}" if reasons else "")
    return Verdict(rid, Status.WRONG, Reason.WRONG_RESULT, detail)


def _samples(row: Row) -> np.ndarray:
    """The raw samples as a sorted array. A non-finite, zero or negative time cannot be real: the
    row is refused (results.load refuses such files; this guards Results made in memory)."""
    if row.timing is None:
        return np.empty(0)
    raw = row.timing.samples_s
    if type(raw) is SortedSamples:  # a lean load's (results.load): used in place, not copied or checked
        values = np.frombuffer(raw, dtype=float)
    else:
        values = np.frombuffer(raw, dtype=float) if isinstance(raw, array) else np.asarray(raw, dtype=float)
        values = np.sort(values)
    if values.size and not (values[0] > 0 and math.isfinite(values[-1])):  # NaN sorts last
        raise InputError(f"{row.id}: timing.samples_s holds {_first_bad(values)!r}; every sample must be a "
                         "finite time above 0 (a broken timer or a hand-edited file?)")
    return values


def _first_bad(values: np.ndarray) -> float:
    return float(values[~(np.isfinite(values) & (values > 0))][0])


def _timing_verdict(rid: str, samples: RowSamples, rule: JudgingRule, control: bool, resource: str) -> Verdict:
    base_s, new_s, policy = samples.base, samples.new, rule.policy
    shift = rule.shift.for_class(resource)
    base_med, new_med = sorted_median(base_s), sorted_median(new_s)
    raw = new_med / base_med
    if shift.controls == (rid,):
        whose = "run's" if not rule.shift.classes or len(rule.shift.classes) == 1 else f"{resource}-bound rows'"
        return Verdict(rid, Status.SAME, Reason.CONTROL,
                       f"{_pct(raw)}: the {whose} only control; its change is the shift they are judged against",
                       base_med, new_med, 1.0, None, None, None, raw, None, control, resource)
    own = samples.change or _log_change(rid, base_s, new_s, policy.alpha)
    # Relative to the shift: subtract it, add its uncertainty (MOVER on the log scale), then the
    # run-to-run spread from history when given.
    centre = own.value - shift.log_shift
    below = math.hypot(own.below, shift.above, rule.widen)
    above = math.hypot(own.above, shift.below, rule.widen)
    low, high = math.exp(centre - below), math.exp(centre + above)
    # Two-sided: the interval says which direction, the rank test only whether there is a shift.
    p_value = samples.p_value
    if p_value is None:
        p_value = float(sps.mannwhitneyu(new_s * math.exp(-shift.log_shift), base_s, alternative="two-sided").pvalue)
    p_value = 1.0 if math.isnan(p_value) else p_value
    status, reason = decide(low, high, p_value, policy)
    ratio = math.exp(centre)
    detail = _timing_detail(reason, ratio, low, high, p_value, policy)
    if shift.estimated:
        detail += f"; raw {_pct(raw)} before removing the {resource}-bound shift {_pct(math.exp(shift.log_shift))}"
    finding = next((f for f in rule.shift.findings if f.row_id == rid), None) if control else None
    if finding is not None:
        reason, detail = Reason.CONTROL_MOVED, finding.text(rule.shift.clock_phrase())
    resolution = max(high - ratio, ratio - low) / ratio
    return Verdict(rid, status, reason, detail, base_med, new_med, ratio, low, high, p_value, raw, resolution,
                   control, resource)


def decide(ci_low: float, ci_high: float, p_value: float, policy: ComparePolicy) -> tuple[Status, Reason]:
    """The verdict rule, given the median-ratio interval and the Mann–Whitney p-value.

    SLOWER/FASTER need both: the whole interval beyond 1 ± min_effect (the change is large enough)
    and p < alpha (the ranks shifted too, so it is not one lucky median). An interval wholly inside
    the band is SAME; one that crosses a band edge is INCONCLUSIVE (more samples would settle it).
    """
    upper, lower = 1 + policy.min_effect, 1 - policy.min_effect
    significant = p_value < policy.alpha
    if ci_low > upper or ci_high < lower:
        if not significant:
            return Status.INCONCLUSIVE, Reason.TESTS_DISAGREE
        return (Status.SLOWER if ci_low > upper else Status.FASTER), Reason.CLEAR_GAP
    if lower <= ci_low and ci_high <= upper:
        return Status.SAME, Reason.BELOW_MIN_EFFECT if significant else Reason.WITHIN_NOISE
    return Status.INCONCLUSIVE, Reason.OVERLAPPING


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f} %"


def _timing_detail(
    reason: Reason, ratio: float, low: float, high: float, p_value: float, policy: ComparePolicy
) -> str:
    level = f"{(1 - policy.alpha) * 100:g} % CI {_pct(low)} to {_pct(high)}"
    band = f"±{policy.min_effect * 100:g} %"
    p = f"Mann–Whitney p={p_value:.2g}"
    texts = {
        Reason.CLEAR_GAP: f"{_pct(ratio)} ({level}, beyond {band}); {p}",
        Reason.WITHIN_NOISE: f"{_pct(ratio)} ({level}, inside {band}); {p}",
        Reason.BELOW_MIN_EFFECT: f"{_pct(ratio)} is real ({p}) but smaller than {band} ({level})",
        Reason.OVERLAPPING: f"{_pct(ratio)} ({level}) crosses the {band} limit; {p}; take more samples",
        Reason.TESTS_DISAGREE: f"{_pct(ratio)} ({level}) but {p} >= {policy.alpha:g}; distributions overlap",
    }
    return texts[reason]

