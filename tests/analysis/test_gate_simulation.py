"""The gate's promises of issue 26, simulated on the CPU from recorded H100 suite runs (seeded).

Each trial resamples every row's recorded samples with replacement (its own noise), then applies
what the trial is about: a whole-run shift, a shift of one resource class (a memory clock, an SM
clock), a regression of one project row, a control row that regressed on its own. The SM clocks
stay as recorded: nothing about the machine changed unless the scenario says so.

Recorded files (tests/fixtures/results, README there): two runs of suites/ci.toml (8 rows, 2
controls) and one of suites/course.toml (65 rows, 21 controls), all on one H100.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from gpuprof import results as results_io
from gpuprof.analysis.ceilings import from_environment
from gpuprof.analysis.compare import Status, compare_results, gate
from gpuprof.analysis.compare_presets import PRESETS, parse_fail_on
from gpuprof.analysis.resource_class import COMPUTE, DRAM, resource_class
from gpuprof.analysis.run_shift import is_control
from gpuprof.errors import InputError
from gpuprof.results import Results, Row

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "results"
DEFAULT = PRESETS["default"]
TRIALS = 200  # the regression scenario on the CI suite: >= 198 of 200 caught
SHIFT_TRIALS = 50  # per shift size: 200 trials over the four sizes of each kind of shift
COURSE_TRIALS = 15  # the course suite is 8x larger: fewer trials, each with 44 project rows at risk


def _load(name: str) -> Results:
    path = RECORDED / name
    if path.suffix == ".gz":
        return results_io.from_dict(json.loads(gzip.decompress(path.read_bytes())), path)
    return results_io.load(path)


CI_BASE, CI_NEW = _load("h100_ci_a.json"), _load("h100_ci_b.json")
COURSE = _load("h100_course_a.json.gz")

Factor = Callable[[Row], float]


def _resampled(results: Results, rng: np.random.Generator, factor: Factor = lambda row: 1.0) -> Results:
    """Every timed row's samples drawn again from its own (bootstrap), times factor(row)."""
    rows = []
    for row in results.rows:
        if row.timing is not None and len(row.timing.samples_s):
            recorded = np.asarray(row.timing.samples_s)
            drawn = rng.choice(recorded, recorded.size) * factor(row)
            row = dataclasses.replace(row, timing=dataclasses.replace(row.timing, samples_s=drawn.tolist()))
        rows.append(row)
    return dataclasses.replace(results, rows=rows)


def _classes(results: Results) -> dict[str, str]:
    ceilings = from_environment(results.environment)
    return {row.id: resource_class(row, ceilings) for row in results.rows}


def _project_rows(results: Results) -> list[str]:
    return [row.id for row in results.rows if not is_control(row) and row.timing and len(row.timing.samples_s)]


def _controls(results: Results) -> list[str]:
    return [row.id for row in results.rows if is_control(row)]


def _false_alarms(base: Results, new: Results, trials: int, seed: int, factor: Factor) -> list[str]:
    """Trials where a project row was called SLOWER or the gate failed, though only the machine moved."""
    rng = np.random.default_rng(seed)
    alarms = []
    for trial in range(trials):
        report = compare_results(_resampled(base, rng), _resampled(new, rng, factor), DEFAULT)
        slower = [v.row_id for v in report.verdicts if v.status is Status.SLOWER and not v.control]
        if slower or gate(report):
            alarms.append(f"trial {trial}: {slower or gate(report)}")
    return alarms


def test_the_recorded_files_are_what_the_simulation_assumes():
    classes = _classes(COURSE)
    assert len(CI_BASE.rows) == 8 and _controls(CI_BASE) == ["vecadd/torch/268435456", "matmul/cublas/4096x4096x4096"]
    assert {classes[c] for c in _controls(COURSE)} >= {COMPUTE, DRAM} and len(_controls(COURSE)) == 21
    ci = _classes(CI_BASE)
    assert ci["vecadd/torch/268435456"] == DRAM and ci["matmul/cublas/4096x4096x4096"] == COMPUTE


@pytest.mark.parametrize("shift", [-0.03, 0.0, 0.02, 0.05])
def test_ci_whole_run_shift_is_never_a_regression(shift):
    assert _false_alarms(CI_BASE, CI_NEW, SHIFT_TRIALS, 1, lambda row: 1 + shift) == []


@pytest.mark.parametrize(("resource", "shift"), [(DRAM, 0.025), (DRAM, 0.05), (COMPUTE, 0.05), (COMPUTE, -0.03)])
def test_ci_shift_of_one_resource_class_is_never_a_regression(resource, shift):
    classes = _classes(CI_BASE)
    alarms = _false_alarms(CI_BASE, CI_NEW, SHIFT_TRIALS, 2, lambda row: 1 + shift * (classes[row.id] == resource))
    assert alarms == []


@pytest.mark.parametrize(("resource", "shift"), [(None, -0.03), (None, 0.05), (DRAM, 0.05), (COMPUTE, 0.05)])
def test_course_whole_run_and_class_shifts_are_never_a_regression(resource, shift):
    classes = _classes(COURSE)
    alarms = _false_alarms(COURSE, COURSE, COURSE_TRIALS, 3,
                           lambda row: 1 + shift * (resource is None or classes[row.id] == resource))
    assert alarms == []


def test_ci_five_percent_regression_is_caught_with_a_control_five_percent_slower_too():
    """Each trial: one project row 5 % slower and one control 5 % slower, both drawn at random. The
    row must be SLOWER (>= 99 %), no other row SLOWER or FASTER, and the control named as a finding."""
    rng = np.random.default_rng(4)
    project, controls = _project_rows(CI_BASE), _controls(CI_BASE)
    caught, wrong, unnamed = 0, [], []
    for trial in range(TRIALS):
        regressed, control = project[trial % len(project)], controls[int(rng.integers(len(controls)))]
        slower = {regressed, control}
        report = compare_results(_resampled(CI_BASE, rng),
                                 _resampled(CI_NEW, rng, lambda row, s=slower: 1.05 if row.id in s else 1.0), DEFAULT)
        verdict = {v.row_id: v for v in report.verdicts}[regressed]
        caught += verdict.status is Status.SLOWER and any(line.startswith(regressed) for line in gate(report))
        wrong += [f"{trial}: {v.row_id} {v.status}" for v in report.verdicts
                  if v.row_id != regressed and not v.control and v.status in (Status.SLOWER, Status.FASTER)]
        if control not in {f.row_id for f in report.shift.findings}:
            unnamed.append(f"{trial}: {control}")
    assert caught >= 0.99 * TRIALS and wrong == [] and unnamed == []


def test_course_control_regression_is_a_finding_and_never_makes_rows_faster_or_fail():
    """cuBLAS 10 % slower at the same clock, nothing else changed: named, no row FASTER or SLOWER, pass."""
    rng = np.random.default_rng(5)
    control = "matmul/cublas/4096x4096x4096"
    for _ in range(COURSE_TRIALS):
        report = compare_results(_resampled(COURSE, rng),
                                 _resampled(COURSE, rng, lambda row: 1.10 if row.id == control else 1.0), DEFAULT)
        assert [f.row_id for f in report.shift.findings] == [control]
        assert "is 10." in report.shift.lines()[-1] and "at the same clock" in report.shift.lines()[-1]
        moved = [v.row_id for v in report.verdicts if v.status in (Status.SLOWER, Status.FASTER) and not v.control]
        assert moved == [] and gate(report) == []
        assert gate(dataclasses.replace(report, fail_on=parse_fail_on("control")))


def test_all_rows_slower_is_a_verdict_of_its_own_and_fails_with_fail_on_run_shift():
    rng = np.random.default_rng(6)
    for base, new in ((CI_BASE, CI_NEW), (COURSE, COURSE)):
        report = compare_results(_resampled(base, rng), _resampled(new, rng, lambda row: 1.05), DEFAULT,
                                 fail_on=parse_fail_on("run-shift=3"), run_shift_limit=0.03)
        text = report.shift.describe()  # ci_b itself ran 0.4 % faster than ci_a: 4.6 % in all
        assert report.shift.uniform and re.match(r"every row, controls included, is [45]\.\d % slower", text)
        assert re.search(r"at the same clock \(199\d MHz\)", text)
        (failure,) = gate(report)
        assert re.match(r"run shift: the whole run [45]\.\d % slower", failure) and "3 %" in failure
        assert gate(dataclasses.replace(report, fail_on=parse_fail_on(None))) == []


@pytest.mark.parametrize("slower", [1.10, 1.50])
def test_ci_control_far_slower_at_the_same_clock_changes_no_verdict(slower):
    """The issue's cases: cuBLAS 10 % (every row INCONCLUSIVE) or 50 % slower (six rows FASTER)."""
    rng = np.random.default_rng(7)
    control = "matmul/cublas/4096x4096x4096"
    report = compare_results(_resampled(CI_BASE, rng),
                             _resampled(CI_NEW, rng, lambda row: slower if row.id == control else 1.0), DEFAULT)
    assert [f.row_id for f in report.shift.findings] == [control]
    assert {v.status for v in report.verdicts if not v.control} == {Status.SAME} and gate(report) == []


def test_a_one_sample_row_fails_and_a_half_infinite_file_is_refused(tmp_path):
    data = json.loads((RECORDED / "h100_ci_b.json").read_text())
    data["rows"][6]["timing"]["samples_s"] = [x * 1.5 for x in data["rows"][6]["timing"]["samples_s"][:1]]
    (tmp_path / "one.json").write_text(json.dumps(data))
    report = compare_results(CI_BASE, results_io.load(tmp_path / "one.json"), DEFAULT)
    (failure,) = gate(report)
    assert failure.startswith("matmul/warptile/4096x4096x4096 INCONCLUSIVE (too_few_samples): too few samples: "
                              "16 in BASE, 1 in NEW; preset default needs at least 10")
    samples = data["rows"][0]["timing"]["samples_s"]
    data["rows"][0]["timing"]["samples_s"] = [float("inf")] * (len(samples) // 2) + samples[len(samples) // 2:]
    (tmp_path / "inf.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"inf.json: .*vecadd/grid/268435456: timing.samples_s\[0\] is inf"):
        results_io.load(tmp_path / "inf.json")
