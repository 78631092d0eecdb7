"""`gpuprof suite --gpus` work order (commands.suite_plan): the duration model, the history file, and
the longest-first shared-queue schedule, simulated with fake durations (no GPU, no processes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuprof import results
from gpuprof.commands import suite_plan
from gpuprof.commands.suite import load
from gpuprof.commands.suite_plan import Estimate, Unit, estimate_units, longest_first, makespan, simulate, units_of
from gpuprof.errors import InputError
from gpuprof.results import CheckResult, Row, Timing
from gpuprof.variants import catalog

COURSE = Path(__file__).resolve().parents[2] / "suites" / "course.toml"


def estimates(seconds):
    return [Estimate(s, "model") for s in seconds]


def lpt(seconds):
    """Durations in the order longest_first hands them out."""
    units = [Unit(i, 0, f"v{i}", None) for i in range(len(seconds))]
    return [seconds[u.number] for u in longest_first(units, estimates(seconds))]


def test_longest_first_breaks_ties_by_suite_order():
    units = [Unit(i, 0, f"v{i}", None) for i in range(5)]
    order = longest_first(units, estimates([1.0, 3.0, 1.0, 3.0, 2.0]))
    assert [u.number for u in order] == [1, 3, 4, 0, 2]


def test_the_shared_queue_simulation_gives_each_unit_to_the_first_free_gpu():
    # GPU 0 takes 6; GPU 1 takes 3, 3 (free at 6: tie with GPU 0, lower index wins the next), ...
    assert simulate([6, 3, 3, 2, 2, 1], 2) == [[0, 3, 5], [1, 2, 4]]
    assert makespan([6, 3, 3, 2, 2, 1], 2) == 9


def test_the_slow_unit_starts_first_wherever_the_suite_puts_it():
    suite_order = [1.0, 1.0, 1.0, 1.0, 6.0]  # the slow variant last, as in a family's teaching order
    assert simulate(suite_order, 2) == [[4], [0, 1, 2, 3]]  # in suite order the last unit alone took 8 s
    assert makespan(suite_order, 2) == 6.0


def test_a_gpu_keeps_to_its_families():
    # family a: 6 + 4 s, family b: 5 + 2 + 2 s; a GPU new to a family pays 3 s first.
    durations, families = [6.0, 5.0, 4.0, 2.0, 2.0], ["a", "b", "a", "b", "b"]
    first_use = {"a": 3.0, "b": 3.0}
    # GPU 0 starts a (most work), GPU 1 starts b, and each stays with its own: 6 + 4 + 3 and 5 + 2 + 2 + 3
    assert simulate(durations, 2, families, first_use) == [[0, 2], [1, 3, 4]]
    assert makespan(durations, 2, families, first_use) == 13.0
    # longest first alone (every unit its own family) crosses them: both GPUs pay both first uses
    assert simulate(durations, 2) == [[0, 3, 4], [1, 2]]
    assert max(6 + 2 + 2 + 3 + 3, 5 + 4 + 3 + 3) == 16


def test_a_free_gpu_takes_another_gpus_family_rather_than_wait():
    # one family of 6 equal units and nothing else: both GPUs share it, 3 units each
    assert [len(units) for units in simulate([2.0] * 6, 2, ["a"] * 6)] == [3, 3]


def test_the_course_keeps_each_family_on_one_gpu_until_the_end():
    """Measured one-GPU unit walls of course.toml (H200, session 6, cold caches) as durations."""
    walls = {"transfers": [31.5, 13.3, 9.6, 9.2, 8.7, 8.5], "mnist": [19.0, 14.0, 2.9, 2.6, 0.3, 0.3, 0.2, 0.2],
             "fused": [14.7, 14.1, 2.1, 1.6, 0.5, 0.5, 0.4] + [0.2] * 5, "vecadd": [8.9, 7.5, 7.5, 0.3, 0.2, 0.2],
             "histogram": [18.2, 1.4, 0.4] + [0.2] * 3 + [0.1] * 4, "matmul": [6.4, 1.2, 1.1, 0.7, 0.7, 0.6, 0.5, 0.5,
                                                                              0.3, 0.3, 0.1],
             "fft": [6.5, 1.3] + [0.4] * 3 + [0.3] + [0.1] * 6}
    durations = [d for ds in walls.values() for d in ds]
    families = [f for f, ds in walls.items() for _ in ds]
    gpus = simulate(durations, 2, families)
    split = [sorted({families[u] for u in units}) for units in gpus]
    assert sum(len(fs) for fs in split) <= len(walls) + 1  # at most one family shared, at the very end
    assert makespan(durations, 2, families) <= sum(durations) / 2 + max(durations)


@pytest.mark.parametrize("workers", [2, 3, 4, 8])
def test_longest_first_makespan_is_within_the_list_scheduling_bound(workers):
    rng = np.random.default_rng(13)
    for _ in range(300):
        seconds = list(rng.lognormal(0.5, 1.2, size=int(rng.integers(1, 60))))
        ordered = lpt(seconds)
        span = makespan(ordered, workers)
        assert span <= sum(seconds) / workers + max(seconds) + 1e-9
        assert span >= max(sum(seconds) / workers, max(seconds)) - 1e-9  # no schedule beats this
        assert simulate(ordered, workers) == simulate(lpt(seconds), workers)  # deterministic


def test_the_model_starts_the_course_with_the_naive_matmul():
    suite = load(COURSE)
    units = units_of(suite)
    guessed = estimate_units(suite, units)
    order = longest_first(units, guessed)
    first = order[0]
    assert (suite.cases[first.case_index].family, first.variant) == ("matmul", "naive")
    assert {e.source for e in guessed} == {"model"}
    by_name = {(suite.cases[u.case_index].family, u.variant, str(u.size)): e.seconds for u, e in zip(units, guessed)}
    # naive: 0.0075 of the FP32 peak (manifest) -> ~0.27 s a launch; 10 samples + 8 more launches + 1 s
    assert by_name[("matmul", "naive", "None")] == pytest.approx(1.0 + 18 * 137.4e9 / 66.9e12 / 0.0075, rel=0.02)
    # a fast kernel samples until max_time_s (2 s), plus its fixed cost
    assert by_name[("vecadd", "torch", "None")] == pytest.approx(3.0, rel=0.01)


def test_model_launch_time_is_the_binding_roof_over_the_efficiency():
    peaks = suite_plan.ceilings.Ceilings(bandwidth_bytes_s=2e12, flops={"fp32": 50e12, "tf32": 400e12})
    assert suite_plan.model_launch_s(4e9, 1e9, "fp32", 0.5, peaks) == pytest.approx(4e-3)  # memory bound
    assert suite_plan.model_launch_s(1e6, 1e12, "tf32", 0.5, peaks) == pytest.approx(5e-3)  # its own peak
    timing = {"mode": "cold", "min_samples": 10, "max_time_s": 2.0}
    assert suite_plan.model_unit_s(1.0, timing) == pytest.approx(1.0 + 8 + 10 * (1 + 50e-6))  # min_samples rule
    assert suite_plan.model_unit_s(1e-6, timing) == pytest.approx(1.0 + 8e-6 + 1000 * (1e-6 + 50e-6))  # max_samples


def _row(variant, samples, gpu=None):
    return Row(family="matmul", variant=variant, size={"m": 4096, "n": 4096, "k": 4096}, vendor=False,
               check=CheckResult(status=results.OK),
               timing=Timing(mode="cold", samples_s=samples, stop_reason="converged", summary=None), gpu=gpu)


def test_a_history_file_overrides_the_model_where_it_has_the_row():
    suite = load(COURSE)
    units = units_of(suite)
    history = results.Results(environment={"gpu_name": "NVIDIA H200"}, rows=[
        _row("cublas", [2.7e-3] * 20, gpu={"index": 1, "unit_wall_s": 40.0}),  # recorded by a --gpus run
        _row("warptile", [0.1] * 200),  # a single-GPU file: samples x median + launches + fixed cost
    ])
    got = estimate_units(suite, units, history)
    named = {suite.cases[u.case_index].family + "/" + u.variant: e for u, e in zip(units, got) if u.size is None}
    assert named["matmul/cublas"] == Estimate(40.0, "history")
    assert named["matmul/warptile"].source == "history"
    assert named["matmul/warptile"].seconds == pytest.approx(1.0 + 8 * 0.1 + 200 * (0.1 + 50e-6))
    assert named["matmul/naive"].source == "model"
    assert longest_first(units, got)[0].variant == "cublas"  # what the last run said comes first


def test_history_of_a_row_without_samples_is_unknown():
    row = _row("naive", [])
    assert suite_plan.history_unit_s(row) is None


def test_expected_efficiency_in_a_manifest_is_checked(tmp_path):
    data = {"name": "mine", "technique": "t", "vendor": True, "expected_efficiency": 2}
    with pytest.raises(InputError, match=r"'expected_efficiency' must be a fraction in \(0, 1\]"):
        catalog.parse_variant(tmp_path / "family.toml", 1, data)
    data["expected_efficiency"] = 0.25
    assert catalog.parse_variant(tmp_path / "family.toml", 1, data).expected_efficiency == 0.25


def test_a_students_kernels_dir_variants_stay_with_their_family():
    """The adversarial suite's planted kernels (kernels_dir, written the way a student edits a
    built-in) are units of their family: the dispatch keeps them on the GPU that runs it."""
    suite = load(Path(__file__).resolve().parents[1] / "suites" / "adversarial.toml")
    units = units_of(suite)
    assert {"caches_result", "lost_tile", "off_by_one_edge"} <= {u.variant for u in units}
    seconds = [e.seconds for e in estimate_units(suite, units)]
    families = [suite.cases[u.case_index].family for u in units]
    gpus = simulate(seconds, 2, families)
    split = [f for f in set(families) if sum(any(families[u] == f for u in taken) for taken in gpus) > 1]
    assert len(split) <= 1  # at most one family shared, where the run evens out its end
