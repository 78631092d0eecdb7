"""The batched rank test of a large compare gives the verdicts the per-row test gives."""

from __future__ import annotations

import random

from gpuprof.analysis import compare
from gpuprof.analysis.compare_presets import policy_for
from gpuprof.results import CheckResult, Results, Row, Timing


def _row(i: int, samples: list[float]) -> Row:
    return Row("vecadd", f"v{i}", {"n": 1024}, False, CheckResult("ok"), Timing("cold", samples, "spread", None))


def test_batched_p_values_equal_per_row_ones():
    rng = random.Random(7)
    base_rows, new_rows = [], []
    for i in range(40):
        n = (9, 12, 64)[i % 3]
        slow = 1.03 if i % 4 == 0 else 1.0
        base_rows.append(_row(i, [round(1e-4 * (1 + rng.gauss(0, 0.01)), 7) for _ in range(n)]))  # rounded: ties
        new_rows.append(_row(i, [round(1e-4 * slow * (1 + rng.gauss(0, 0.01)), 7) for _ in range(n + i % 2)]))
    policy = policy_for("default")
    report = compare.compare_results(Results({}, base_rows), Results({}, new_rows), policy)
    samples = {b.id: (compare._samples(b), compare._samples(n)) for b, n in zip(base_rows, new_rows)}
    assert len(compare._rank_test_batch(samples)) > 30
    timed = 0
    for verdict, base_row, new_row in zip(report.verdicts, base_rows, new_rows):
        alone = compare.compare_row(base_row, new_row, compare.JudgingRule(policy))
        assert verdict.status == alone.status and verdict.reason == alone.reason
        if alone.p_value is None:  # too few samples for the preset: no test at all
            assert verdict.p_value is None
            continue
        timed += 1
        assert abs(verdict.p_value - alone.p_value) <= 1e-12 * max(1.0, alone.p_value)
    assert timed > 20
