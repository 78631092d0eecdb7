"""Pure statistics of timing samples: summaries and the robust spread that stops sampling."""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpuprof.results import Summary

# 1.4826 * MAD estimates the standard deviation of normal data while ignoring outliers.
MAD_TO_SIGMA = 1.4826


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values (numpy's default method)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def robust_rel_spread(samples: Sequence[float]) -> float:
    """1.4826 * MAD / median: a relative standard deviation that one slow outlier cannot inflate."""
    values = sorted(samples)
    median = quantile(values, 0.5)
    if median <= 0:
        return math.inf
    mad = quantile(sorted(abs(v - median) for v in values), 0.5)
    return MAD_TO_SIGMA * mad / median


def summarize(samples: Sequence[float]) -> Summary:
    if not samples:
        raise ValueError("no samples to summarize")
    values = sorted(samples)
    return Summary(
        n=len(values),
        median_s=quantile(values, 0.5),
        mean_s=math.fsum(values) / len(values),
        min_s=values[0],
        max_s=values[-1],
        p25_s=quantile(values, 0.25),
        p75_s=quantile(values, 0.75),
        rel_spread=robust_rel_spread(values),
    )
