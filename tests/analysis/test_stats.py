"""stats.summarize / robust_rel_spread on known samples, timing._stop_reason, TimingPolicy validation."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from gpuprof.analysis import stats
from gpuprof.errors import UsageError
from gpuprof.measure import timing
from gpuprof.measure.timing import TimingPolicy


def noisy(n: int, rel_sigma: float, seed: int = 0, median: float = 1e-3) -> list[float]:
    return (median * (1 + rel_sigma * np.random.default_rng(seed).standard_normal(n))).tolist()


def identical(n: int, value: float = 1e-3) -> list[float]:
    return [value] * n


# ---------------------------------------------------------------- summarize


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 10, 37, 1000])
def test_summarize_matches_numpy(n):
    samples = np.random.default_rng(n).lognormal(-7, 0.3, n).tolist()  # unsorted, skewed, positive
    s = stats.summarize(samples)
    assert s.n == n
    assert s.median_s == pytest.approx(np.median(samples), rel=1e-12)
    assert s.p25_s == pytest.approx(np.quantile(samples, 0.25), rel=1e-12)
    assert s.p75_s == pytest.approx(np.quantile(samples, 0.75), rel=1e-12)
    assert s.mean_s == pytest.approx(np.mean(samples), rel=1e-12)
    assert (s.min_s, s.max_s) == (min(samples), max(samples))
    assert s.min_s <= s.p25_s <= s.median_s <= s.p75_s <= s.max_s


def test_summarize_does_not_reorder_the_callers_samples():
    samples = [3.0, 1.0, 2.0]
    stats.summarize(samples)
    assert samples == [3.0, 1.0, 2.0]


@pytest.mark.parametrize("q", [0.0, 0.1, 0.25, 0.5, 0.9, 1.0])
def test_quantile_is_numpys_linear_method(q):
    values = sorted(np.random.default_rng(1).uniform(0, 1, 11).tolist())
    assert stats.quantile(values, q) == pytest.approx(np.quantile(values, q, method="linear"), abs=1e-15)


def test_robust_spread_known_answer():
    # median 3; absolute deviations 2, 1, 0, 1, 97 -> MAD 1
    assert stats.robust_rel_spread([1.0, 2.0, 3.0, 4.0, 100.0]) == pytest.approx(stats.MAD_TO_SIGMA / 3)


def test_robust_spread_estimates_relative_sigma_of_normal_samples():
    samples = noisy(20_000, 0.01, seed=3)
    expected = statistics.stdev(samples) / statistics.median(samples)
    assert stats.robust_rel_spread(samples) == pytest.approx(expected, rel=0.05)


def test_robust_spread_ignores_one_outlier_but_stdev_does_not():
    clean = noisy(50, 0.002, seed=4)
    dirty = clean + [100 * clean[0]]  # one sample hit by a context switch
    robust_clean, robust_dirty = stats.robust_rel_spread(clean), stats.robust_rel_spread(dirty)
    cv_clean = statistics.stdev(clean) / statistics.mean(clean)
    cv_dirty = statistics.stdev(dirty) / statistics.mean(dirty)
    assert robust_dirty == pytest.approx(robust_clean, rel=0.2)
    assert cv_dirty > 50 * cv_clean
    assert stats.summarize(dirty).median_s == pytest.approx(stats.summarize(clean).median_s, rel=0.01)


def test_identical_samples_have_zero_spread():
    s = stats.summarize(identical(7))
    assert s.rel_spread == 0.0
    assert s.min_s == s.p25_s == s.median_s == s.mean_s == s.p75_s == s.max_s


def test_one_sample():
    s = stats.summarize([2e-3])
    assert s.n == 1 and s.median_s == s.min_s == s.max_s == 2e-3 and s.rel_spread == 0.0


def test_zero_median_has_infinite_spread_never_convergence():
    assert stats.robust_rel_spread([0.0, 0.0, 0.0]) == math.inf
    assert stats.summarize([0.0, 0.0]).rel_spread == math.inf
    policy = TimingPolicy(min_samples=2, max_samples=100)
    assert timing._stop_reason([0.0] * 10, policy, 0.0) == ""


def test_no_samples_is_an_error():
    with pytest.raises(ValueError):
        stats.summarize([])
    with pytest.raises(ValueError):
        stats.quantile([], 0.5)


# ---------------------------------------------------------------- _stop_reason

POLICY = TimingPolicy(min_samples=10, max_samples=100, max_time_s=1.0, target_spread=0.01)
SPREAD = 0.05  # well above POLICY.target_spread


@pytest.mark.parametrize(
    ("samples", "elapsed", "reason"),
    [
        (identical(10), 0.0, "converged"),
        (noisy(10, POLICY.target_spread / 10), 0.0, "converged"),
        (identical(100), 0.0, "converged"),  # converged wins over max_samples
        (identical(9), 0.0, ""),  # never stop before min_samples while time is left
        (noisy(50, SPREAD), 0.5, ""),  # spread too large, budget left
        (noisy(100, SPREAD), 0.0, "max_samples"),
        (noisy(20, SPREAD), POLICY.max_time_s, "time_budget"),
        (noisy(20, SPREAD), 3 * POLICY.max_time_s, "time_budget"),
        (noisy(3, SPREAD), 3 * POLICY.max_time_s, ""),  # over budget: keep going to min_samples
        (noisy(3, SPREAD), 10 * POLICY.max_time_s, "time_budget_before_min_samples"),
        (identical(3), 10 * POLICY.max_time_s, "time_budget_before_min_samples"),
    ],
)
def test_stop_reason(samples, elapsed, reason):
    assert timing._stop_reason(samples, POLICY, elapsed) == reason


def test_stop_reason_inputs_sit_on_the_intended_side_of_the_target():
    assert stats.robust_rel_spread(noisy(3, SPREAD)) > POLICY.target_spread
    assert stats.robust_rel_spread(noisy(20, SPREAD)) > POLICY.target_spread
    assert stats.robust_rel_spread(noisy(10, POLICY.target_spread / 10)) <= POLICY.target_spread


def test_stop_reason_target_is_inclusive():
    samples = [1.0, 2.0, 3.0, 4.0, 100.0]
    spread = stats.robust_rel_spread(samples)
    at = TimingPolicy(min_samples=5, max_samples=10, target_spread=spread)
    below = TimingPolicy(min_samples=5, max_samples=10, target_spread=spread * 0.999)
    assert timing._stop_reason(samples, at, 0.0) == "converged"
    assert timing._stop_reason(samples, below, 0.0) == ""


# ---------------------------------------------------------------- TimingPolicy


def test_default_policy_is_valid_and_describes_its_mode():
    policy = TimingPolicy()
    data = policy.to_dict()
    assert data["mode"] == "cold"
    assert data["mode_description"] == timing.MODES["cold"]
    assert data["min_samples"] <= data["max_samples"]


@pytest.mark.parametrize("mode", list(timing.MODES))
def test_every_mode_is_accepted(mode):
    assert TimingPolicy(mode=mode).to_dict()["mode_description"] == timing.MODES[mode]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"mode": "warm"}, ["unknown timing mode 'warm'", ", ".join(timing.MODES)]),
        ({"mode": "COLD"}, ["unknown timing mode"]),
        ({"min_samples": 20, "max_samples": 10}, ["min_samples <= max_samples"]),
        ({"min_samples": 0}, ["min_samples"]),
        ({"min_samples": -1}, ["min_samples"]),
        ({"max_time_s": 0.0}, ["max_time_s"]),
        ({"max_time_s": -1.0}, ["max_time_s"]),
        ({"max_time_s": math.nan}, ["max_time_s"]),
        ({"target_spread": 0.0}, ["target_spread"]),
        ({"target_spread": -0.01}, ["target_spread"]),
    ],
)
def test_bad_policy_is_a_usage_error(kwargs, words):
    with pytest.raises(UsageError) as info:
        TimingPolicy(**kwargs)
    assert info.value.exit_code == 2
    for word in words:
        assert word in info.value.message
