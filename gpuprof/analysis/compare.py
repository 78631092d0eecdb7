"""Pure comparison of two results files: per-row verdicts with reason codes, and the CI gate rule."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import numpy as np
from scipy import stats as sps

from gpuprof import results as results_io
from gpuprof.errors import InputError, UsageError
from gpuprof.results import OK, Results, Row


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


@dataclass(frozen=True)
class Verdict:
    """The decision for one row id; times in seconds, ratio = new median / base median."""

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


@dataclass(frozen=True)
class CompareReport:
    policy: ComparePolicy
    verdicts: list[Verdict]
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    base_label: str = "BASE"
    new_label: str = "NEW"

    def counts(self) -> dict[Status, int]:
        return {s: sum(v.status is s for v in self.verdicts) for s in Status}


def is_failure(verdict: Verdict) -> bool:
    """Improvements, noise and still-wrong rows never fail the gate; only regressions do."""
    return verdict.status is Status.SLOWER or verdict.reason is Reason.NEWLY_WRONG


def gate(report: CompareReport) -> list[str]:
    """The failure reasons, one line each; an empty list means the gate passes."""
    return [f"{v.row_id} {v.status.value} ({v.reason.value}): {v.detail}" for v in report.verdicts if is_failure(v)]


def compare_files(
    base_path: str | Path, new_path: str | Path, policy: ComparePolicy, *, allow_different_gpu: bool = False
) -> CompareReport:
    """Load both files (InputError on bad ones) and compare them, labelled by their paths."""
    base, new = results_io.load(base_path), results_io.load(new_path)
    return compare_results(
        base, new, policy, allow_different_gpu=allow_different_gpu,
        base_label=str(base_path), new_label=str(new_path),
    )


def compare_results(
    base: Results,
    new: Results,
    policy: ComparePolicy,
    *,
    allow_different_gpu: bool = False,
    base_label: str = "BASE",
    new_label: str = "NEW",
) -> CompareReport:
    """Verdicts for the rows in both files (in NEW's order), plus added/removed ids and warnings."""
    warnings = environment_warnings(base, new, allow_different_gpu, base_label, new_label)
    base_rows, new_rows = _index(base, base_label), _index(new, new_label)
    p_values = _rank_test_batch(base_rows, new_rows)
    verdicts = []
    for rid, new_row in new_rows.items():
        base_row = base_rows.get(rid)
        if base_row is None:
            if new_row.check.status != OK:
                warnings.append(f"{rid}: added in {new_label} with check status {new_row.check.status!r}")
            continue
        warnings.extend(_mode_warning(base_row, new_row))
        verdicts.append(compare_row(base_row, new_row, policy, p_values.get(rid)))
    return CompareReport(
        policy=policy,
        verdicts=verdicts,
        added=[rid for rid in new_rows if rid not in base_rows],
        removed=[rid for rid in base_rows if rid not in new_rows],
        warnings=warnings,
        base_label=base_label,
        new_label=new_label,
    )


# Environment keys that may shift times a little without making them incomparable.
_DRIFT_KEYS = (("driver_version", "driver"), ("toolkit_version", "CUDA toolkit"), ("clock_policy", "clock policy"))


def environment_warnings(
    base: Results, new: Results, allow_different_gpu: bool, base_label: str = "BASE", new_label: str = "NEW"
) -> list[str]:
    """Refuse different GPU models (times do not transfer); warn on what may shift times a little."""
    b, n = base.environment, new.environment
    warnings = []
    if b.get("gpu_name") != n.get("gpu_name"):
        where = f"{base_label} ran on {b.get('gpu_name')!r}, {new_label} on {n.get('gpu_name')!r}"
        if not allow_different_gpu:
            raise InputError(f"{where}; times from different GPUs are not comparable "
                             "(pass --allow-different-gpu to compare anyway)")
        warnings.append(f"{where}; compared anyway (--allow-different-gpu)")
    elif b.get("gpu_uuid") and n.get("gpu_uuid") and b["gpu_uuid"] != n["gpu_uuid"]:
        warnings.append("same GPU model but a different card (gpu_uuid differs); cards of one model differ by a few %")
    for key, what in _DRIFT_KEYS:
        if b.get(key) != n.get(key):
            warnings.append(f"different {what}: {b.get(key)!r} in {base_label}, {n.get(key)!r} in {new_label}")
    return warnings


def _index(results: Results, label: str) -> dict[str, Row]:
    rows: dict[str, Row] = {}
    for row in results.rows:
        if row.id in rows:
            raise InputError(f"{label}: row {row.id} appears twice; each (family, variant, size) must be unique")
        rows[row.id] = row
    return rows


def _mode_warning(base_row: Row, new_row: Row) -> list[str]:
    if base_row.timing and new_row.timing and base_row.timing.mode != new_row.timing.mode:
        return [f"{new_row.id}: timing mode {base_row.timing.mode!r} in BASE but {new_row.timing.mode!r} in NEW; "
                "the times measure different things"]
    return []


def compare_row(base_row: Row, new_row: Row, policy: ComparePolicy, p_value: float | None = None) -> Verdict:
    """Correctness first (a wrong result has no meaningful time), then the timing decision.
    p_value: the rank test's, when compare_results computed it in a batch."""
    rid = new_row.id
    if new_row.check.status != OK:
        return _wrong_verdict(rid, base_row, new_row)
    if base_row.check.status != OK:
        return Verdict(rid, Status.INCONCLUSIVE, Reason.BASE_WRONG,
                       f"fixed: check was {base_row.check.status!r} in BASE, so BASE has no trustworthy time")
    base_s, new_s = _samples(base_row), _samples(new_row)
    if base_s.size == 0 or new_s.size == 0:
        side = "BASE" if base_s.size == 0 else "NEW"
        return Verdict(rid, Status.INCONCLUSIVE, Reason.NOT_TIMED, f"{side} has no timing samples")
    if min(base_s.size, new_s.size) < policy.min_samples:
        return Verdict(rid, Status.INCONCLUSIVE, Reason.TOO_FEW_SAMPLES,
                       f"{base_s.size} samples in BASE, {new_s.size} in NEW; preset {policy.name} "
                       f"needs at least {policy.min_samples} each",
                       float(np.median(base_s)), float(np.median(new_s)))
    return _timing_verdict(rid, base_s, new_s, policy, p_value)


# Rows with more samples than this per side get their rank test in one vectorised call: scipy's
# 'auto' method is then asymptotic for every row anyway, so batching gives the same p-values.
_BATCH_MIN_SAMPLES = 9
_BATCH_ROWS = 1024


def _rank_test_batch(base_rows: dict[str, Row], new_rows: dict[str, Row]) -> dict[str, float]:
    """Mann–Whitney p-values of many rows at once (one scipy call per pair of sample counts): an
    18k-row compare spent most of its time in scipy's per-call overhead."""
    groups: dict[tuple[int, int], list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for rid, new_row in new_rows.items():
        base_row = base_rows.get(rid)
        if base_row is None or new_row.check.status != OK or base_row.check.status != OK:
            continue
        base_s, new_s = _samples(base_row), _samples(new_row)
        if min(base_s.size, new_s.size) >= _BATCH_MIN_SAMPLES:
            groups.setdefault((new_s.size, base_s.size), []).append((rid, new_s, base_s))
    out: dict[str, float] = {}
    for members in groups.values():
        for start in range(0, len(members), _BATCH_ROWS):  # chunks bound scipy's temporary arrays
            chunk = members[start:start + _BATCH_ROWS]
            if len(chunk) < 2:
                continue
            news = np.stack([m[1] for m in chunk])
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


def _timing_verdict(rid: str, base_s: np.ndarray, new_s: np.ndarray, policy: ComparePolicy,
                    p_value: float | None = None) -> Verdict:
    base_med, new_med = float(np.median(base_s)), float(np.median(new_s))
    low, high = median_ratio_interval(base_s, new_s, policy.alpha)
    # Two-sided: the interval says which direction, the rank test only whether there is a shift.
    if p_value is None:
        p_value = float(sps.mannwhitneyu(new_s, base_s, alternative="two-sided").pvalue)
    p_value = 1.0 if math.isnan(p_value) else p_value
    status, reason = decide(low, high, p_value, policy)
    ratio = new_med / base_med
    detail = _timing_detail(reason, ratio, low, high, p_value, policy)
    return Verdict(rid, status, reason, detail, base_med, new_med, ratio, low, high, p_value)


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
    k = _median_rank(n, alpha)
    if k < 0:
        raise ValueError(f"{n} samples cannot bound the median at alpha={alpha}")
    return float(sorted_s[k]), float(sorted_s[n - 1 - k])


@functools.lru_cache(maxsize=1024)
def _median_rank(n: int, alpha: float) -> int:
    """The largest k with P(Bin(n, 1/2) <= k) <= alpha/2 (-1 if none); the same for every row of n samples."""
    cdf = sps.binom.cdf(np.arange(n), n, 0.5)
    return int(np.searchsorted(cdf, alpha / 2, side="right")) - 1


def median_ratio_interval(base_s: np.ndarray, new_s: np.ndarray, alpha: float) -> tuple[float, float]:
    """Interval for median(new) / median(base), combining the two median intervals by MOVER.

    MOVER (Zou & Donner 2008) adds the lower and upper distances of each interval in quadrature on
    the log scale, so asymmetric intervals stay asymmetric and the result has about level 1 - alpha.
    """
    lb, ub = np.log(median_interval(base_s, alpha))
    ln, un = np.log(median_interval(new_s, alpha))
    tb, tn = math.log(np.median(base_s)), math.log(np.median(new_s))
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

