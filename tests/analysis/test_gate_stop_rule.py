"""timing._stop_reason aiming at the gate: sample until the median is resolved, within a budget."""

from __future__ import annotations

import numpy as np
import pytest

from gpuprof.analysis.order_stats import median_resolution
from gpuprof.errors import UsageError
from gpuprof.measure import timing
from gpuprof.measure.timing import TimingPolicy

GATE = TimingPolicy(target_resolution=0.008, resolution_alpha=0.01, resolution_budget_s=20.0)


def noisy(n: int, noise: float, seed: int = 0) -> list[float]:
    return (0.1 * (1 + noise * np.random.default_rng(seed).standard_normal(n))).tolist()


def test_without_a_target_the_old_rule_stops_at_the_time_budget():
    samples = noisy(20, 0.03)  # 100 ms at 3 %: 20 samples fill the 2 s budget
    assert timing._stop_reason(samples, TimingPolicy(), elapsed_s=2.0) == "time_budget"


def test_aiming_at_the_gate_keeps_sampling_past_max_time_until_resolved():
    samples = noisy(20, 0.03)
    assert median_resolution(samples, 0.01) > 0.008
    assert timing._stop_reason(samples, GATE, elapsed_s=2.0) == ""  # not yet: the median is not resolved
    resolved = noisy(400, 0.03, seed=1)
    assert median_resolution(resolved, 0.01) <= 0.008
    assert timing._stop_reason(resolved, GATE, elapsed_s=2.0) == "time_budget"


def test_the_resolution_budget_ends_it():
    assert timing._stop_reason(noisy(20, 0.03), GATE, elapsed_s=20.0) == "resolution_budget"


def test_converged_needs_both_a_small_spread_and_a_resolved_median():
    tight = noisy(10, 0.001)
    assert timing._stop_reason(tight, GATE, elapsed_s=0.1) == "converged"
    outlier = [*tight[:9], tight[0] * 1.2]  # MAD ignores it, the n = 10 interval [min, max] does not
    assert timing._stop_reason(outlier, TimingPolicy(), elapsed_s=0.1) == "converged"
    assert timing._stop_reason(outlier, GATE, elapsed_s=0.1) == ""


def test_recorded_resolution_is_none_without_enough_samples():
    assert timing.recorded_resolution([1.0, 1.1], GATE) is None
    assert timing.recorded_resolution(noisy(100, 0.01), GATE) == pytest.approx(
        median_resolution(noisy(100, 0.01), 0.01))


@pytest.mark.parametrize("value", [0.0, 1.0, -0.1])
def test_target_resolution_is_validated(value):
    with pytest.raises(UsageError, match="target_resolution"):
        TimingPolicy(target_resolution=value)
