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


def duration_stats(durations: Sequence[float], total_all: float) -> dict[str, float]:
    """nsys-style summary of one name's durations (ns): share of `total_all`, total, mean, median,
    min, max and the sample standard deviation (n - 1, as nsys prints it; 0 for one value)."""
    if not durations:
        raise ValueError("no durations to summarize")
    values = sorted(durations)
    total = math.fsum(values)
    mean = total / len(values)
    variance = math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
    return {
        "time_pct": round(100 * total / total_all, 1) if total_all else 0.0,
        "total_ns": total,
        "avg_ns": mean,
        "med_ns": quantile(values, 0.5),
        "min_ns": values[0],
        "max_ns": values[-1],
        "stddev_ns": math.sqrt(variance),
    }
