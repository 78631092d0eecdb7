"""compare.py on synthetic samples with known answers, plus one recorded H100 pair when present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuprof import results as results_io
from gpuprof.analysis.compare import Reason, Status, compare_results, decide, gate
from gpuprof.analysis.compare_presets import PRESETS, ComparePolicy, parse_fail_on, policy_for
from gpuprof.analysis.order_stats import median_interval, median_resolution
from gpuprof.analysis.stats import summarize
from gpuprof.commands.compare import CompareRequest, execute
from gpuprof.errors import InputError, UsageError
from gpuprof.results import CheckResult, Results, Row, Timing

H100 = "NVIDIA H100 80GB HBM3"
DEFAULT = PRESETS["default"]
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "results"


def make_row(variant="grid", median=1e-3, noise=0.005, n=30, seed=0, status="ok", mode="cold", size=None):
    """A vecadd row whose samples are median * (1 + noise * N(0, 1)), seeded so answers are fixed."""
    timing = None
    if n:
        samples = (median * (1 + noise * np.random.default_rng(seed).standard_normal(n))).tolist()
        timing = Timing(mode=mode, samples_s=samples, stop_reason="target_spread", summary=summarize(samples))
    reasons = [] if status == "ok" else ["max relative error 1.0 > tolerance 1e-5"]
    return Row(family="vecadd", variant=variant, size=size or {"n": 1 << 26}, vendor=False,
               check=CheckResult(status=status, reasons=reasons), timing=timing)


def make_results(*rows, **environment):
    env = {"gpu_name": H100, "gpu_uuid": "GPU-aaaa", "driver_version": "580.159.04",
           "toolkit_version": "13.0", "clock_policy": "default"}
    return Results(environment={**env, **environment}, rows=list(rows))


def one_verdict(base_row, new_row, policy=DEFAULT):
    report = compare_results(make_results(base_row), make_results(new_row), policy)
    (verdict,) = report.verdicts
    return verdict, report


def test_identical_samples_are_same_within_noise():
    verdict, report = one_verdict(make_row(seed=1), make_row(seed=1))
    assert (verdict.status, verdict.reason) == (Status.SAME, Reason.WITHIN_NOISE)
    assert verdict.ratio == 1.0 and verdict.p_value == pytest.approx(1.0)
    assert gate(report) == []


def test_five_percent_slower_with_small_noise_is_slower_clear_gap():
    verdict, report = one_verdict(make_row(seed=1), make_row(median=1.05e-3, seed=2))
    assert (verdict.status, verdict.reason) == (Status.SLOWER, Reason.CLEAR_GAP)
    assert 1 + DEFAULT.min_effect < verdict.ci_low < 1.05 < verdict.ci_high
    assert verdict.p_value < DEFAULT.alpha
    (failure,) = gate(report)
    assert failure.startswith("vecadd/grid/67108864 SLOWER (clear_gap): +")


def test_five_percent_faster_is_faster_and_never_fails_the_gate():
    verdict, report = one_verdict(make_row(seed=1), make_row(median=0.95e-3, seed=2))
    assert (verdict.status, verdict.reason) == (Status.FASTER, Reason.CLEAR_GAP)
    assert gate(report) == []


def test_noisy_overlapping_samples_are_inconclusive():
    base, new = make_row(noise=0.10, n=15, seed=1), make_row(median=1.02e-3, noise=0.10, n=15, seed=2)
    verdict, report = one_verdict(base, new)
    assert (verdict.status, verdict.reason) == (Status.INCONCLUSIVE, Reason.OVERLAPPING)
    assert "take more samples" in verdict.detail
    assert gate(report) == []


def test_real_but_tiny_shift_is_same_below_min_effect():
    base, new = make_row(noise=0.001, n=200, seed=1), make_row(median=1.005e-3, noise=0.001, n=200, seed=2)
    verdict, _ = one_verdict(base, new)
    assert (verdict.status, verdict.reason) == (Status.SAME, Reason.BELOW_MIN_EFFECT)


@pytest.mark.parametrize(
    ("slowdown", "preset", "expected"),
    [
        (1.015, "strict", Status.SLOWER),  # 1 % min effect, so 1.5 % counts
        (1.015, "default", Status.SAME),  # 2 %: real but too small to matter
        (1.03, "default", Status.SLOWER),
        (1.03, "permissive", Status.SAME),  # 5 %
        (1.08, "permissive", Status.SLOWER),
    ],
)
def test_presets_move_the_min_effect(slowdown, preset, expected):
    base = make_row(noise=0.002, n=60, seed=1)
    new = make_row(median=slowdown * 1e-3, noise=0.002, n=60, seed=2)
    verdict, _ = one_verdict(base, new, policy_for(preset))
    assert verdict.status is expected


@pytest.mark.parametrize(
    ("ci", "p_value", "expected"),
    [
        ((1.03, 1.06), 1e-6, (Status.SLOWER, Reason.CLEAR_GAP)),
        ((0.94, 0.97), 1e-6, (Status.FASTER, Reason.CLEAR_GAP)),
        ((1.03, 1.06), 0.5, (Status.INCONCLUSIVE, Reason.TESTS_DISAGREE)),  # both must agree
        ((0.99, 1.01), 0.5, (Status.SAME, Reason.WITHIN_NOISE)),
        ((1.005, 1.015), 1e-6, (Status.SAME, Reason.BELOW_MIN_EFFECT)),
        ((1.01, 1.04), 1e-6, (Status.INCONCLUSIVE, Reason.OVERLAPPING)),  # a gap, but maybe < 2 %
        ((0.90, 1.10), 0.5, (Status.INCONCLUSIVE, Reason.OVERLAPPING)),
    ],
)
def test_decide_needs_the_interval_and_the_rank_test_to_agree(ci, p_value, expected):
    assert decide(*ci, p_value, DEFAULT) == expected


def test_median_interval_of_ten_samples_at_alpha_001_is_min_to_max():
    values = np.sort(np.arange(1.0, 11.0))
    assert median_interval(values, 0.01) == (1.0, 10.0)  # 1 - 2/2^10 >= 0.99, the next pair is not


def test_too_few_samples_is_inconclusive():
    verdict, _ = one_verdict(make_row(n=5, seed=1), make_row(median=2e-3, n=5, seed=2))
    assert (verdict.status, verdict.reason) == (Status.INCONCLUSIVE, Reason.TOO_FEW_SAMPLES)
    assert "needs at least 10" in verdict.detail


def test_row_timed_in_base_without_samples_in_new_fails_by_default():
    """A regression that adds a host sync ends with zero samples: it must not pass as 'no regression'."""
    verdict, report = one_verdict(make_row(seed=1), make_row(n=0))
    assert (verdict.status, verdict.reason) == (Status.INCONCLUSIVE, Reason.UNTIMED_IN_NEW)
    (failure,) = gate(report)
    assert "untimed_in_new" in failure
    relaxed = compare_results(make_results(make_row(seed=1)), make_results(make_row(n=0)), DEFAULT,
                              fail_on=parse_fail_on("none"))
    assert gate(relaxed) == []


def test_row_untimed_in_base_is_inconclusive_not_timed():
    verdict, report = one_verdict(make_row(n=0), make_row(seed=1))
    assert (verdict.status, verdict.reason) == (Status.INCONCLUSIVE, Reason.NOT_TIMED)
    assert gate(report) == []


def test_newly_wrong_row_fails_the_gate():
    verdict, report = one_verdict(make_row(seed=1), make_row(status="wrong", n=0))
    assert (verdict.status, verdict.reason) == (Status.WRONG, Reason.NEWLY_WRONG)
    assert "max relative error" in verdict.detail
    (failure,) = gate(report)
    assert failure.startswith("vecadd/grid/67108864 WRONG (newly_wrong): check 'wrong' in NEW, was ok in BASE")


def test_row_wrong_in_both_is_wrong_but_not_a_new_failure():
    verdict, report = one_verdict(make_row(status="wrong", n=0), make_row(status="fault", n=0))
    assert (verdict.status, verdict.reason) == (Status.WRONG, Reason.WRONG_RESULT)
    assert gate(report) == []


def test_row_fixed_since_base_has_nothing_to_compare():
    verdict, report = one_verdict(make_row(status="wrong", n=0), make_row(seed=2))
    assert (verdict.status, verdict.reason) == (Status.INCONCLUSIVE, Reason.BASE_WRONG)
    assert gate(report) == []


def test_added_and_removed_rows_are_listed_not_judged():
    base = make_results(make_row("grid", seed=1), make_row("one_block", seed=2))
    new = make_results(make_row("grid", seed=1), make_row("vectorized", seed=3), make_row("torch", status="wrong", n=0))
    report = compare_results(base, new, DEFAULT)
    assert [v.row_id for v in report.verdicts] == ["vecadd/grid/67108864"]
    assert report.added == ["vecadd/vectorized/67108864", "vecadd/torch/67108864"]
    assert report.removed == ["vecadd/one_block/67108864"]
    assert any("torch" in w and "'wrong'" in w for w in report.warnings)
    assert gate(report) == []


def test_different_gpu_models_are_refused():
    base = make_results(make_row(seed=1))
    new = make_results(make_row(seed=1), gpu_name="NVIDIA A100-SXM4-80GB", gpu_uuid="GPU-bbbb")
    with pytest.raises(InputError, match="not comparable.*--allow-different-gpu"):
        compare_results(base, new, DEFAULT)
    report = compare_results(base, new, DEFAULT, allow_different_gpu=True)
    assert any("A100" in w and "compared anyway" in w for w in report.warnings)


def test_same_model_different_card_only_warns():
    base, new = make_results(make_row(seed=1)), make_results(make_row(seed=1), gpu_uuid="GPU-bbbb")
    report = compare_results(base, new, DEFAULT)
    assert [w for w in report.warnings if "gpu_uuid" in w]


@pytest.mark.parametrize(("key", "word"), [("driver_version", "driver"), ("toolkit_version", "toolkit"),
                                           ("clock_policy", "clock policy")])
def test_environment_drift_warns(key, word):
    report = compare_results(make_results(make_row(seed=1)), make_results(make_row(seed=1), **{key: "other"}), DEFAULT)
    (warning,) = report.warnings
    assert word in warning and "'other'" in warning


def test_different_timing_modes_are_refused_unless_allowed():
    base, new = make_results(make_row(seed=1)), make_results(make_row(seed=1, mode="hot"))
    with pytest.raises(InputError, match="timing mode 'cold' in BASE but 'hot' in NEW.*--allow-mismatch"):
        compare_results(base, new, DEFAULT)
    report = compare_results(base, new, DEFAULT, allow_mismatch=True)
    (warning,) = report.warnings
    assert warning.startswith("vecadd/grid/67108864: timing mode 'cold' in BASE but 'hot' in NEW")


def test_duplicate_row_ids_are_bad_input():
    with pytest.raises(InputError, match="appears twice"):
        compare_results(make_results(make_row(seed=1), make_row(seed=2)), make_results(make_row(seed=1)), DEFAULT)


def test_compare_is_deterministic():
    base, new = make_results(make_row(noise=0.05, seed=1)), make_results(make_row(median=1.01e-3, noise=0.05, seed=2))
    assert compare_results(base, new, DEFAULT) == compare_results(base, new, DEFAULT)


def test_presets_hold_the_documented_thresholds():
    table = {name: (p.min_effect, p.alpha, p.min_samples) for name, p in PRESETS.items()}
    assert table == {"default": (0.02, 0.01, 10), "strict": (0.01, 0.05, 8), "permissive": (0.05, 0.001, 12)}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_effect": 0.0}, "min effect"),
        ({"min_effect": 0.9}, "min effect"),
        ({"alpha": 0.5}, "alpha"),
        ({"alpha": 0.001, "min_samples": 5}, "needs at least 11 samples"),
    ],
)
def test_policy_ranges_are_validated(kwargs, message):
    with pytest.raises(UsageError, match=message):
        ComparePolicy(**{"name": "custom", "min_effect": 0.02, "alpha": 0.01, "min_samples": 10, **kwargs})


def test_unknown_preset_lists_the_choices():
    with pytest.raises(UsageError, match="choices: default, strict, permissive"):
        policy_for("loose")


def test_recorded_back_to_back_h100_runs_have_no_slower_rows():
    """Two runs of suites/smoke.toml on the lent H100, one after the other (docs/PERFORMANCE.md)."""
    report = execute(CompareRequest((RECORDED / "smoke_a.json",), RECORDED / "smoke_b.json", DEFAULT))
    assert len(report.verdicts) == 6
    assert [v.row_id for v in report.verdicts if v.status is Status.SLOWER] == []
    assert gate(report) == []


def test_recorded_slower_warptile_build_fails_the_gate():
    """The same H100 session: warptile rebuilt with a 128x128 block tile (-D BM=128 -D BN=128 ...)."""
    report = execute(CompareRequest((RECORDED / "smoke_a.json",), RECORDED / "smoke_slow.json", DEFAULT))
    slower = [v for v in report.verdicts if v.status is Status.SLOWER]
    assert [v.row_id for v in slower] == ["matmul/warptile/2048x2048x2048"]
    assert slower[0].ratio > 1.02 and slower[0].reason is Reason.CLEAR_GAP
    assert len(report.removed) == 3  # the vecadd rows the single run did not have
    assert gate(report)


# --- whole-run shifts, controls and honest verdicts (issue 13) ---

def scaled(results, factor, variants=None):
    """Every sample (of the named variants) times factor, clocks divided by it: a slower run."""
    for row in results.rows:
        if row.timing and (variants is None or row.variant in variants):
            row.timing.samples_s = [s * factor for s in row.timing.samples_s]
            row.timing.sm_clock_mhz = [c / factor for c in row.timing.sm_clock_mhz]
    return results


def recorded(name):
    return results_io.load(RECORDED / f"{name}.json")


def test_recorded_run_slower_as_a_whole_is_a_shift_not_a_regression():
    """Every sample of the recorded H100 NEW run x1.025 (another card, a warmer room): the gate passes."""
    report = compare_results(recorded("smoke_a"), scaled(recorded("smoke_b"), 1.025), DEFAULT)
    assert report.shift.controls == ("vecadd/torch/67108864", "matmul/cublas/2048x2048x2048")
    assert report.shift.ratio == pytest.approx(1.025, abs=0.002)
    text = report.shift.describe()
    assert text.startswith("every row, controls included, is 2.") and "% slower" in text
    assert "while the SM clock went from 1995 to 1946 MHz" in text
    assert all(v.status is Status.SAME for v in report.verdicts)
    assert all(v.raw_ratio > 1.02 for v in report.verdicts)  # each row alone would have read SLOWER
    assert gate(report) == []


def test_recorded_run_shift_plus_one_slower_row_fails_on_that_row_only():
    new = scaled(scaled(recorded("smoke_b"), 1.025), 1.06, variants={"warptile"})
    report = compare_results(recorded("smoke_a"), new, DEFAULT)
    slower = [v for v in report.verdicts if v.status is Status.SLOWER]
    assert [v.row_id for v in slower] == ["matmul/warptile/2048x2048x2048"]
    assert slower[0].ratio == pytest.approx(1.06, abs=0.005) and slower[0].ci_low > 1.02
    (failure,) = gate(report)
    assert failure.startswith("matmul/warptile/2048x2048x2048 SLOWER (clear_gap)")


def test_without_controls_the_report_says_it_cannot_separate_a_shift():
    base, new = recorded("smoke_a"), scaled(recorded("smoke_b"), 1.025)
    for row in (*base.rows, *new.rows):
        row.vendor = False
    report = compare_results(base, new, DEFAULT)
    assert not report.shift.estimated
    assert "cannot tell a whole-run shift" in report.shift.describe()
    assert any(w.startswith("clocks 1946 vs 1995 MHz") for w in report.warnings)
    assert gate(report)  # judged raw, the shift reads as regressions: the report says why


def test_suite_control_rows_count_as_controls():
    base = make_results(make_row("grid", seed=1), make_row("one_block", seed=2))
    new = make_results(make_row("grid", median=1.03e-3, seed=3), make_row("one_block", median=1.03e-3, seed=4))
    base.rows[1].control = new.rows[1].control = True
    report = compare_results(base, new, DEFAULT)
    assert report.shift.controls == ("vecadd/one_block/67108864",)
    grid, control = report.verdicts
    assert grid.status is Status.SAME and grid.raw_ratio > 1.02
    assert (control.status, control.reason) == (Status.SAME, Reason.CONTROL)
    assert gate(report) == []


def test_one_control_that_moved_against_the_others_is_judged():
    rows = [make_row(v, seed=i) for i, v in enumerate(["a", "b", "c", "d"])]
    moved = [make_row(v, median=1.03e-3 if v != "d" else 1.10e-3, seed=10 + i) for i, v in enumerate("abcd")]
    for row in (*rows, *moved):
        row.vendor = True
    report = compare_results(make_results(*rows), make_results(*moved), DEFAULT)
    assert report.shift.ratio == pytest.approx(1.03, abs=0.005)  # the median of four: d cannot drag it
    d = {v.row_id: v for v in report.verdicts}["vecadd/d/67108864"]
    # Issue 26: a control that moved alone is a finding by name, not a regression of the project.
    assert (d.status, d.reason) == (Status.SLOWER, Reason.CONTROL_MOVED)
    assert [f.row_id for f in report.shift.findings] == ["vecadd/d/67108864"]
    assert "control vecadd/d/67108864 is 10." in d.detail and "at the same clock" not in d.detail
    assert gate(report) == []
    assert gate(compare_results(make_results(*rows), make_results(*moved), DEFAULT, fail_on=parse_fail_on("control")))


def test_skipped_in_new_is_an_environment_problem_not_newly_wrong():
    skipped = make_row(status="skipped", n=0)
    skipped.check.reasons = ["not run: PyTorch is not installed"]
    verdict, report = one_verdict(make_row(seed=1), skipped)
    assert (verdict.status, verdict.reason) == (Status.INCONCLUSIVE, Reason.SKIPPED_IN_NEW)
    assert "PyTorch is not installed" in verdict.detail
    assert gate(report) == []
    strict = compare_results(make_results(make_row(seed=1)), make_results(skipped), DEFAULT,
                             fail_on=parse_fail_on("missing"))
    assert gate(strict)


def test_fail_on_inconclusive_makes_undecided_rows_fail():
    base, new = make_results(make_row(noise=0.05, seed=1)), make_results(make_row(median=1.02e-3, noise=0.05, seed=2))
    assert compare_results(base, new, DEFAULT).verdicts[0].status is Status.INCONCLUSIVE
    assert gate(compare_results(base, new, DEFAULT)) == []
    (failure,) = gate(compare_results(base, new, DEFAULT, fail_on=parse_fail_on("inconclusive")))
    assert "INCONCLUSIVE (overlapping)" in failure


def test_resized_and_removed_rows_are_told_apart_and_fail_with_missing():
    base = make_results(make_row("grid", seed=1), make_row("one_block", seed=2), make_row("torch", seed=3))
    new = make_results(make_row("grid", seed=1), make_row("one_block", seed=2, size={"n": 1 << 20}))
    report = compare_results(base, new, DEFAULT)
    assert report.resized == [("vecadd/one_block/67108864", "vecadd/one_block/1048576")]
    assert report.removed_only == ["vecadd/torch/67108864"] and report.added_only == []
    assert gate(report) == []
    failures = gate(compare_results(base, new, DEFAULT, fail_on=parse_fail_on("missing")))
    assert failures == ["vecadd/torch/67108864 removed: in BASE, not in NEW",
                        "vecadd/one_block/67108864 resized to vecadd/one_block/1048576: not compared"]


def test_size_keys_that_differ_under_one_id_are_refused():
    with pytest.raises(InputError, match="size .* in BASE but .* in NEW.*--allow-mismatch"):
        compare_results(make_results(make_row(seed=1, size={"n": 64})), make_results(make_row(seed=1, size={"m": 64})),
                        DEFAULT)


def test_rows_are_paired_by_id_and_gpu_model():
    base, new = make_results(make_row(seed=1)), make_results(make_row(seed=1))
    new.rows[0].gpu = {"index": 1, "uuid": "GPU-x", "name": "NVIDIA H200"}
    with pytest.raises(InputError, match="ran on 'NVIDIA H100 80GB HBM3' in BASE and on 'NVIDIA H200' in NEW"):
        compare_results(base, new, DEFAULT)
    new.rows[0].gpu["name"] = H100  # another card of the same model, from a --gpus run: compared
    assert compare_results(base, new, DEFAULT).verdicts[0].status is Status.SAME


@pytest.mark.parametrize(("text", "expected"), [
    (None, {"untimed", "too-few-samples"}),
    ("inconclusive,missing", {"untimed", "too-few-samples", "inconclusive", "missing"}),
    ("none", set()), ("none,missing", {"missing"}), ("none,run-shift=3", {"run-shift"}),
])
def test_parse_fail_on(text, expected):
    assert {f.value for f in parse_fail_on(text)} == expected


def test_parse_fail_on_refuses_unknown_words():
    with pytest.raises(UsageError, match="--fail-on 'slow'"):
        parse_fail_on("slow")


def test_history_widens_intervals_by_the_run_to_run_spread():
    """Four BASE runs whose medians wobble by ~1.5 % per row: a 3 % change is no longer SLOWER."""
    wobble = [1.0, 1.015, 0.985, 1.01]
    bases = [make_results(make_row("grid", median=1e-3 * w, noise=0.002, seed=i),
                          make_row("one_block", median=2e-3 / w, noise=0.002, seed=20 + i))
             for i, w in enumerate(wobble)]
    new = make_results(make_row("grid", median=1.04e-3, noise=0.002, seed=9),
                       make_row("one_block", median=2e-3, noise=0.002, seed=29))
    alone = compare_results(bases[-1], new, DEFAULT)
    assert {v.row_id: v.status for v in alone.verdicts}["vecadd/grid/67108864"] is Status.SLOWER
    report = compare_results(bases[-1], new, DEFAULT, history=bases[:-1])
    assert report.history.runs == 4 and report.history.sigma == pytest.approx(0.013, abs=0.004)
    assert report.history.medians["vecadd/grid/67108864"][0] == pytest.approx(1e-3, rel=0.01)
    assert {v.row_id: v.status for v in report.verdicts}["vecadd/grid/67108864"] is Status.INCONCLUSIVE


def test_coarse_rows_are_listed():
    report = compare_results(make_results(make_row(noise=0.05, seed=1)), make_results(make_row(noise=0.05, seed=2)),
                             DEFAULT)
    (coarse,) = report.coarse()
    assert coarse.resolution > DEFAULT.min_effect


def test_median_resolution_is_the_medians_relative_half_width():
    values = np.arange(1.0, 11.0)  # n = 10 at alpha 0.01: the interval is [min, max] = [1, 10], median 5.5
    assert median_resolution(values, 0.01) == pytest.approx(4.5 / 5.5)
    assert median_resolution(values[:5], 0.01) == float("inf")


def test_history_from_another_gpu_model_is_refused():
    other = make_results(make_row(seed=3), gpu_name="NVIDIA A100-SXM4-80GB")
    with pytest.raises(InputError, match="history BASE ran on 'NVIDIA A100-SXM4-80GB'"):
        compare_results(make_results(make_row(seed=1)), make_results(make_row(seed=2)), DEFAULT, history=[other])


def test_a_new_file_with_no_rows_fails_the_gate():
    report = compare_results(make_results(make_row(seed=1)), make_results(), DEFAULT)
    (failure,) = gate(report)
    assert failure == "NEW has no rows: nothing was compared with BASE's 1"


def test_a_new_file_with_no_row_in_common_fails_the_gate():
    report = compare_results(make_results(make_row("grid", seed=1)), make_results(make_row("vectorized", seed=2)),
                             DEFAULT)
    assert report.verdicts == []
    (failure,) = gate(report)
    assert failure.startswith("no row in common: none of NEW's 1 rows is in BASE (1 rows); nothing was compared")


def test_a_new_file_with_every_row_untimed_fails_in_one_line_not_one_per_row():
    base = make_results(make_row("grid", seed=1), make_row("vectorized", seed=2))
    new = make_results(make_row("grid", n=0), make_row("vectorized", n=0))
    failures = gate(compare_results(base, new, DEFAULT))
    assert failures == [("no row of NEW was timed (untimed_in_new): all 2 rows timed in BASE have no samples in it "
                         "(vecadd/grid/67108864, vecadd/vectorized/67108864); "
                         "a --check-only run? a host sync? a hang?")]
    # one row still timed: the untimed one fails on its own line, the file as a whole is fine
    partly = gate(compare_results(base, make_results(make_row("grid", seed=1), make_row("vectorized", n=0)), DEFAULT))
    assert len(partly) == 1 and partly[0].startswith("vecadd/vectorized/67108864 INCONCLUSIVE (untimed_in_new)")


def test_check_only_base_and_new_are_not_an_untimed_new_file():
    """Neither side timed (two --check-only runs): a correctness comparison, which may pass."""
    report = compare_results(make_results(make_row(n=0)), make_results(make_row(n=0)), DEFAULT)
    assert gate(report) == []
