"""Pure comparison of results files: per-row verdicts with reason codes, judged relative to the run's
common shift when control rows exist, and the CI gate rule."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import numpy as np
from scipy import stats as sps

from gpuprof import results as results_io
from gpuprof.errors import InputError, UsageError
from gpuprof.analysis.run_shift import History, LogChange, RunShift, estimate_shift, is_control, run_history
from gpuprof.results import OK, SKIPPED, Results, Row


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
    CONTROL = "control"  # the run's only control row: it defines the shift, so it cannot be judged by it


@dataclass(frozen=True)
class ComparePolicy:
    """Thresholds of one preset; validated so that every preset can actually reach a decision.

    min_effect: relative change of the median that matters (0.02 = 2 %); smaller changes are SAME.
    alpha: significance level of Mann–Whitney; the median-ratio interval has level 1 - alpha.
    min_samples: fewest samples per side before any decision (fewer gives INCONCLUSIVE).
    """

    name: str
    min_effect: float
    alpha: float
    min_samples: int

    def __post_init__(self) -> None:
        if not 0.001 <= self.min_effect <= 0.5:
            raise UsageError(f"min effect {self.min_effect} is outside 0.001..0.5 (0.02 means 2 %)")
        if not 1e-6 <= self.alpha <= 0.2:
            raise UsageError(f"alpha {self.alpha} is outside 1e-6..0.2")
        fewest = fewest_samples_for(self.alpha)
        if self.min_samples < fewest:
            raise UsageError(
                f"min samples {self.min_samples} is too small for alpha {self.alpha}: "
                f"a median interval at that level needs at least {fewest} samples"
            )


def fewest_samples_for(alpha: float) -> int:
    """Smallest n whose [min, max] still covers the median with probability 1 - alpha (1 - 2/2^n)."""
    return math.ceil(math.log2(2 / alpha))


PRESETS: dict[str, ComparePolicy] = {
    p.name: p
    for p in (
        ComparePolicy("default", min_effect=0.02, alpha=0.01, min_samples=10),
        ComparePolicy("strict", min_effect=0.01, alpha=0.05, min_samples=8),
        ComparePolicy("permissive", min_effect=0.05, alpha=0.001, min_samples=12),
    )
}


def policy_for(name: str) -> ComparePolicy:
    try:
        return PRESETS[name]
    except KeyError:
        raise UsageError(f"unknown compare preset {name!r} (choices: {', '.join(PRESETS)})") from None


class FailOn(StrEnum):
    """What else, besides SLOWER and newly WRONG rows, fails the gate (`--fail-on`)."""

    UNTIMED = "untimed"  # timed in BASE, no samples in NEW (e.g. a new host sync): on by default
    INCONCLUSIVE = "inconclusive"  # the gate could not decide (overlapping, too few samples, tests disagree)
    MISSING = "missing"  # removed or resized rows, and rows SKIPPED in NEW for environment reasons


DEFAULT_FAIL_ON: frozenset[FailOn] = frozenset({FailOn.UNTIMED})


def parse_fail_on(text: str | None) -> frozenset[FailOn]:
    """'inconclusive,missing' adds to the default (untimed); 'none' clears it ('none,missing': missing only)."""
    if not text:
        return DEFAULT_FAIL_ON
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    chosen = set() if "none" in words else set(DEFAULT_FAIL_ON)
    for word in words:
        if word == "none":
            continue
        try:
            chosen.add(FailOn(word))
        except ValueError:
            raise UsageError(f"--fail-on {word!r}: choose from {', '.join(f.value for f in FailOn)} or none") from None
    return frozenset(chosen)


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
UNDECIDED = {Reason.OVERLAPPING, Reason.TOO_FEW_SAMPLES, Reason.TESTS_DISAGREE, Reason.NOT_TIMED}


def is_failure(verdict: Verdict, fail_on: frozenset[FailOn] = DEFAULT_FAIL_ON) -> bool:
    """SLOWER and newly WRONG always fail; untimed, inconclusive and skipped rows as fail_on says."""
    if verdict.status is Status.SLOWER or verdict.reason is Reason.NEWLY_WRONG:
        return True
    if verdict.reason is Reason.UNTIMED_IN_NEW:
        return FailOn.UNTIMED in fail_on
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
        return [f"no row in common: none of {report.new_label}'s {new_rows} rows is in {report.base_label} "
                f"({base_rows} rows); nothing was compared (other families, variants or sizes?)"]
    untimed = [v for v in report.verdicts if v.reason is Reason.UNTIMED_IN_NEW]
    timed_in_base = [v for v in report.verdicts if v.base_median_s is not None]
    if untimed and len(untimed) == len(timed_in_base) and FailOn.UNTIMED in report.fail_on:
        named = ", ".join(v.row_id for v in untimed[:3]) + (" …" if len(untimed) > 3 else "")
        return [f"no row of {report.new_label} was timed (untimed_in_new): all {len(untimed)} rows timed in "
                f"{report.base_label} have no samples in it ({named}); a --check-only run? a host sync? a hang?"]
    return []


def gate(report: CompareReport) -> list[str]:
    """The failure reasons, one line each; an empty list means the gate passes. Problems of NEW as a
    whole come first (file_problems); an all-untimed NEW is that one line, not one line per row."""
    whole = file_problems(report)
    all_untimed = bool(whole) and bool(report.verdicts)
    lines = whole + [f"{v.row_id} {v.status.value} ({v.reason.value}): {v.detail}"
                     for v in report.verdicts if is_failure(v, report.fail_on)
                     and not (all_untimed and v.reason is Reason.UNTIMED_IN_NEW)]
    if FailOn.MISSING in report.fail_on:
        lines += [f"{rid} removed: in {report.base_label}, not in {report.new_label}" for rid in report.removed_only]
        lines += [f"{b} resized to {n}: not compared" for b, n in report.resized]
    return lines


def compare_files(
    base_path: str | Path | Sequence[str | Path], new_path: str | Path, policy: ComparePolicy | None, *,
    allow_different_gpu: bool = False, allow_mismatch: bool = False, fail_on: frozenset[FailOn] = DEFAULT_FAIL_ON,
) -> CompareReport:
    """Load the files (InputError on bad ones) and compare, labelled by their paths.

    base_path may be several files, oldest first: the last is the baseline, all of them together
    give each row's run-to-run spread (history). policy None: the preset the suite wrote into NEW
    (`"compare": {"preset": ...}`), else default.
    """
    paths = [base_path] if isinstance(base_path, (str, Path)) else list(base_path)
    if not paths:
        raise UsageError("give at least one BASE results file")
    bases = [results_io.load(p) for p in paths]
    new = results_io.load(new_path)
    return compare_results(
        bases[-1], new, policy or policy_for(str(new.compare.get("preset") or "default")),
        allow_different_gpu=allow_different_gpu, allow_mismatch=allow_mismatch, fail_on=fail_on,
        history=bases[:-1], base_label=str(paths[-1]), new_label=str(new_path),
    )


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
) -> CompareReport:
    """Verdicts for the rows in both files (in NEW's order), judged relative to the controls' common
    shift; plus added, removed and resized ids, the shift, the history and warnings.

    history: earlier BASE runs (oldest first); with them each row's run-to-run spread widens its
    interval, so a row that wobbles between runs needs a larger change to be called SLOWER.
    """
    warnings = environment_warnings(base, new, allow_different_gpu, base_label, new_label)
    base_rows, new_rows = _index(base, base_label), _index(new, new_label)
    common = [rid for rid in new_rows if rid in base_rows]  # ids once: Row.id formats the size each call
    pairs = [(base_rows[rid], new_rows[rid]) for rid in common]
    warnings += _gpu_model_check(pairs, base, new, allow_different_gpu)
    warnings += _mismatch_check(pairs, allow_mismatch)
    for rid, row in new_rows.items():
        if rid not in base_rows and row.check.status != OK:
            warnings.append(f"{rid}: added in {new_label} with check status {row.check.status!r}")
    # Each row's sorted samples once: an 18k-row compare spent seconds re-sorting them per use.
    new_sorted = {rid: _samples(row) for rid, row in new_rows.items() if row.check.status == OK}
    samples = {rid: (_samples(b), new_sorted[rid]) for rid, (b, n) in zip(common, pairs)
               if b.check.status == OK and n.check.status == OK}
    judged = {rid: s for rid, s in samples.items() if min(s[0].size, s[1].size) >= policy.min_samples}
    changes = {rid: _log_change(rid, b, n, policy.alpha) for rid, (b, n) in judged.items()}
    controls = [changes[rid] for rid, (b, n) in zip(common, pairs) if rid in changes and is_control(b) and is_control(n)]
    shift = estimate_shift(controls, policy.alpha, base, new)
    for earlier in history:
        if earlier.environment.get("gpu_name") != base.environment.get("gpu_name") and not allow_different_gpu:
            raise InputError(f"a history BASE ran on {earlier.environment.get('gpu_name')!r}, the baseline on "
                             f"{base.environment.get('gpu_name')!r}; their spread says nothing about one GPU model "
                             "(pass --allow-different-gpu to use it anyway)")
    past = _history([*history, base], policy) if history else None
    widen = past.widening(policy.alpha) if past else 0.0
    p_values = _rank_test_batch(samples, math.exp(-shift.log_shift))
    verdicts = [compare_row(b, n, policy, p_values.get(rid), shift=shift, widen=widen, samples=samples.get(rid),
                            change=changes.get(rid)) for rid, (b, n) in zip(common, pairs)]
    if shift.clocks_differ() and not shift.estimated:
        warnings.append(f"{shift.clock_text()}: without control rows a SLOWER row may be the clock, not the code")
    removed = [rid for rid in base_rows if rid not in new_rows]
    added = [rid for rid in new_rows if rid not in base_rows]
    return CompareReport(
        policy=policy, verdicts=verdicts, added=added, removed=removed, warnings=warnings,
        base_label=base_label, new_label=new_label, resized=_resized(removed, added, base_rows, new_rows),
        shift=shift, history=past, fail_on=fail_on,
        new_medians={rid: _sorted_median(s) for rid, s in new_sorted.items() if s.size},
    )


def _history(bases: list[Results], policy: ComparePolicy) -> History:
    medians = []
    for results in bases:
        timed = {}
        for row in results.rows:
            s = _samples(row)
            if row.check.status == OK and s.size:
                timed[row.id] = _sorted_median(s)
        medians.append(timed)
    return run_history(bases, medians)


def _log_change(rid: str, base_s: np.ndarray, new_s: np.ndarray, alpha: float) -> LogChange:
    low, high = median_ratio_interval(base_s, new_s, alpha)
    value = math.log(_sorted_median(new_s) / _sorted_median(base_s))
    return LogChange(rid, value, value - math.log(low), math.log(high) - value)


def _resized(removed: list[str], added: list[str], base_rows: dict[str, Row],
             new_rows: dict[str, Row]) -> list[tuple[str, str]]:
    """Removed and added rows of one (family, variant): the size changed, so nothing is compared."""
    by_variant = {(new_rows[rid].family, new_rows[rid].variant): rid for rid in added}
    return [(rid, by_variant[key]) for rid in removed
            if (key := (base_rows[rid].family, base_rows[rid].variant)) in by_variant]


# Environment keys that may shift times a little without making them incomparable.
_DRIFT_KEYS = (("driver_version", "driver"), ("toolkit_version", "CUDA toolkit"), ("clock_policy", "clock policy"))


def environment_warnings(
    base: Results, new: Results, allow_different_gpu: bool, base_label: str = "BASE", new_label: str = "NEW"
) -> list[str]:
    """Warn on what may shift times a little; GPU models are checked per row (_gpu_model_check)."""
    b, n = base.environment, new.environment
    warnings = []
    if b.get("gpu_uuid") and n.get("gpu_uuid") and b["gpu_uuid"] != n["gpu_uuid"] \
            and b.get("gpu_name") == n.get("gpu_name"):
        warnings.append("same GPU model but a different card (gpu_uuid differs); cards of one model differ by "
                        "a few %: the control rows' shift takes that out")
    for key, what in _DRIFT_KEYS:
        if b.get(key) != n.get(key):
            warnings.append(f"different {what}: {b.get(key)!r} in {base_label}, {n.get(key)!r} in {new_label}")
    return warnings


def gpu_model(row: Row, results: Results) -> str | None:
    """The GPU model that timed this row: its own record in --gpus runs, else the file's."""
    if row.gpu and row.gpu.get("name"):
        return str(row.gpu["name"])
    return results.environment.get("gpu_name")


def _gpu_model_check(pairs: list[tuple[Row, Row]], base: Results, new: Results, allow: bool) -> list[str]:
    """Refuse pairs timed on different GPU models (times do not transfer); pairs are matched by id."""
    differ = [(b.id, gpu_model(b, base), gpu_model(n, new)) for b, n in pairs if gpu_model(b, base) != gpu_model(n, new)]
    if not differ and base.environment.get("gpu_name") != new.environment.get("gpu_name") and not pairs:
        differ = [("(whole file)", base.environment.get("gpu_name"), new.environment.get("gpu_name"))]
    if not differ:
        return []
    rid, was, now = differ[0]
    where = f"{rid} ran on {was!r} in BASE and on {now!r} in NEW" + (f" (and {len(differ) - 1} more rows)"
                                                                       if len(differ) > 1 else "")
    if not allow:
        raise InputError(f"{where}; times from different GPU models are not comparable "
                         "(pass --allow-different-gpu to compare anyway)")
    return [f"{where}; compared anyway (--allow-different-gpu)"]


def _mismatch_check(pairs: list[tuple[Row, Row]], allow: bool) -> list[str]:
    """One row id measured two different ways (timing mode, size keys) gives meaningless ratios."""
    found = []
    for b, n in pairs:
        if b.timing and n.timing and b.timing.mode != n.timing.mode:
            found.append(f"{n.id}: timing mode {b.timing.mode!r} in BASE but {n.timing.mode!r} in NEW")
        if b.size != n.size:
            found.append(f"{n.id}: size {b.size} in BASE but {n.size} in NEW")
        b_prec, n_prec = getattr(b, "precision", None), getattr(n, "precision", None)
        if b_prec != n_prec:
            found.append(f"{n.id}: precision {b_prec!r} in BASE but {n_prec!r} in NEW")
    if found and not allow:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise InputError(f"{found[0]}{more}: the times measure different things "
                         "(pass --allow-mismatch to compare anyway)")
    return [f"{f}; compared anyway (--allow-mismatch)" for f in found]


def _index(results: Results, label: str) -> dict[str, Row]:
    rows: dict[str, Row] = {}
    for row in results.rows:
        if row.id in rows:
            raise InputError(f"{label}: row {row.id} appears twice; each (family, variant, size) must be unique")
        rows[row.id] = row
    return rows


def compare_row(base_row: Row, new_row: Row, policy: ComparePolicy, p_value: float | None = None, *,
                shift: RunShift | None = None, widen: float = 0.0,
                samples: tuple[np.ndarray, np.ndarray] | None = None, change: LogChange | None = None) -> Verdict:
    """Correctness first (a wrong result has no meaningful time), then the timing decision.
    p_value: the rank test's (of the shift-corrected samples), when compare_results computed it in a batch;
    samples (both rows' _samples) and change (their _log_change), when it computed those already."""
    rid = new_row.id
    control = is_control(new_row)
    if new_row.check.status == SKIPPED and base_row.check.status != SKIPPED:
        reasons = "; ".join(new_row.check.reasons[:1])
        return Verdict(rid, Status.INCONCLUSIVE, Reason.SKIPPED_IN_NEW,
                       "skipped in NEW (an environment problem, not a wrong result)" + (f": {reasons}" if reasons else ""),
                       control=control)
    if new_row.check.status != OK:
        return _wrong_verdict(rid, base_row, new_row)
    if base_row.check.status != OK:
        return Verdict(rid, Status.INCONCLUSIVE, Reason.BASE_WRONG,
                       f"fixed: check was {base_row.check.status!r} in BASE, so BASE has no trustworthy time",
                       control=control)
    base_s, new_s = samples if samples is not None else (_samples(base_row), _samples(new_row))
    if new_s.size == 0 and base_s.size > 0:
        why = f" (stopped: {new_row.timing.stop_reason})" if new_row.timing and new_row.timing.stop_reason else ""
        return Verdict(rid, Status.INCONCLUSIVE, Reason.UNTIMED_IN_NEW,
                       f"timed in BASE but no samples in NEW{why}; a launch that blocks the host "
                       "(a sync, .item()) ends like this", _sorted_median(base_s), control=control)
    if base_s.size == 0 or new_s.size == 0:
        return Verdict(rid, Status.INCONCLUSIVE, Reason.NOT_TIMED, "BASE has no timing samples", control=control)
    if min(base_s.size, new_s.size) < policy.min_samples:
        return Verdict(rid, Status.INCONCLUSIVE, Reason.TOO_FEW_SAMPLES,
                       f"{base_s.size} samples in BASE, {new_s.size} in NEW; preset {policy.name} "
                       f"needs at least {policy.min_samples} each",
                       _sorted_median(base_s), _sorted_median(new_s), control=control)
    return _timing_verdict(rid, base_s, new_s, policy, shift or RunShift(), widen, control, p_value, change)


# Rows with more samples than this per side get their rank test in one vectorised call: scipy's
# 'auto' method is then asymptotic for every row anyway, so batching gives the same p-values.
_BATCH_MIN_SAMPLES = 9
_BATCH_ROWS = 1024


def _rank_test_batch(samples: dict[str, tuple[np.ndarray, np.ndarray]], new_scale: float = 1.0) -> dict[str, float]:
    """Mann–Whitney p-values of many rows at once (one scipy call per pair of sample counts): an
    18k-row compare spent most of its time in scipy's per-call overhead. samples: row id -> (BASE,
    NEW) _samples of rows ok in both; new_scale removes the run shift from NEW's samples, as the
    per-row test does."""
    groups: dict[tuple[int, int], list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for rid, (base_s, new_s) in samples.items():
        if min(base_s.size, new_s.size) >= _BATCH_MIN_SAMPLES:
            groups.setdefault((new_s.size, base_s.size), []).append((rid, new_s, base_s))
    out: dict[str, float] = {}
    for members in groups.values():
        for start in range(0, len(members), _BATCH_ROWS):  # chunks bound scipy's temporary arrays
            chunk = members[start:start + _BATCH_ROWS]
            if len(chunk) < 2:
                continue
            news = np.stack([m[1] for m in chunk]) * new_scale  # elementwise: as scaling each row
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
    """The raw samples as a sorted array; non-finite or non-positive times cannot be real and are dropped."""
    if row.timing is None:
        return np.empty(0)
    values = np.asarray(row.timing.samples_s, dtype=float)
    return np.sort(values[np.isfinite(values) & (values > 0)])


def _sorted_median(sorted_s: np.ndarray) -> float:
    """np.median of already sorted values without its per-call overhead (tens of µs, times 200k calls
    in an 18k-row compare); bit-identical: the middle value, or the mean of the two middle ones."""
    half = sorted_s.size // 2
    if sorted_s.size % 2:
        return float(sorted_s[half])
    return float((sorted_s[half - 1] + sorted_s[half]) / 2)


def _timing_verdict(rid: str, base_s: np.ndarray, new_s: np.ndarray, policy: ComparePolicy, shift: RunShift,
                    widen: float, control: bool, p_value: float | None = None,
                    own: LogChange | None = None) -> Verdict:
    base_med, new_med = _sorted_median(base_s), _sorted_median(new_s)
    raw = new_med / base_med
    if shift.controls == (rid,):
        return Verdict(rid, Status.SAME, Reason.CONTROL,
                       f"{_pct(raw)}: the run's only control; its change is the run shift every row is judged against",
                       base_med, new_med, 1.0, None, None, None, raw, None, control)
    own = own or _log_change(rid, base_s, new_s, policy.alpha)
    # Relative to the shift: subtract it, add its uncertainty (MOVER on the log scale), then the
    # run-to-run spread from history when given.
    centre = own.value - shift.log_shift
    below = math.hypot(own.below, shift.above, widen)
    above = math.hypot(own.above, shift.below, widen)
    low, high = math.exp(centre - below), math.exp(centre + above)
    # Two-sided: the interval says which direction, the rank test only whether there is a shift.
    if p_value is None:
        p_value = float(sps.mannwhitneyu(new_s * math.exp(-shift.log_shift), base_s, alternative="two-sided").pvalue)
    p_value = 1.0 if math.isnan(p_value) else p_value
    status, reason = decide(low, high, p_value, policy)
    ratio = math.exp(centre)
    detail = _timing_detail(reason, ratio, low, high, p_value, policy)
    if shift.estimated:
        detail += f"; raw {_pct(raw)} before removing the run shift"
    resolution = max(high - ratio, ratio - low) / ratio
    return Verdict(rid, status, reason, detail, base_med, new_med, ratio, low, high, p_value, raw, resolution, control)


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


def median_interval(sorted_s: np.ndarray, alpha: float) -> tuple[float, float]:
    """Distribution-free interval for the median from order statistics (binomial), level >= 1 - alpha.

    Exact for any distribution, needs no random numbers, and costs one sort: GPU timings are skewed
    (slow outliers, clock steps), so no normal approximation is trusted here.
    """
    n = sorted_s.size
    k = _order_index(n, alpha)
    if k < 0:
        raise ValueError(f"{n} samples cannot bound the median at alpha={alpha}")
    return float(sorted_s[k]), float(sorted_s[n - 1 - k])


@functools.lru_cache(maxsize=4096)
def _order_index(n: int, alpha: float) -> int:
    """Largest k with P(Bin(n, 1/2) <= k) <= alpha/2 (-1 if none); cached: the stop rule asks every batch."""
    cdf = sps.binom.cdf(np.arange(n), n, 0.5)
    return int(np.searchsorted(cdf, alpha / 2, side="right")) - 1


def median_resolution(samples: Sequence[float], alpha: float) -> float:
    """How well one run pins its median: the larger relative half-width of the median's (1 - alpha)
    interval; inf when there are too few samples for an interval at that level."""
    values = np.sort(np.asarray(samples, dtype=float))
    if values.size < fewest_samples_for(alpha):
        return math.inf
    low, high = median_interval(values, alpha)
    centre = float(np.median(values))
    return max(high - centre, centre - low) / centre if centre > 0 else math.inf


def median_ratio_interval(base_s: np.ndarray, new_s: np.ndarray, alpha: float) -> tuple[float, float]:
    """Interval for median(new) / median(base), combining the two median intervals by MOVER; both
    arrays sorted (as _samples gives them).

    MOVER (Zou & Donner 2008) adds the lower and upper distances of each interval in quadrature on
    the log scale, so asymmetric intervals stay asymmetric and the result has about level 1 - alpha.
    """
    lb, ub = np.log(median_interval(base_s, alpha))
    ln, un = np.log(median_interval(new_s, alpha))
    tb, tn = math.log(_sorted_median(base_s)), math.log(_sorted_median(new_s))
    low = (tn - tb) - math.hypot(tn - ln, ub - tb)
    high = (tn - tb) + math.hypot(un - tn, tb - lb)
    return math.exp(low), math.exp(high)


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

