"""`gpuprof suite --gpus`: scheduling and merging across GPU processes, with fake per-GPU work (no GPU)."""

from __future__ import annotations

import pytest

from gpuprof import results
from gpuprof.commands.suite_gpus import parse_gpus, run_suite_on_gpus, summary_line, units_of
from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.progress import DONE
from gpuprof.results import CheckResult, Results, Row, Timing
from gpuprof.suite_file import load_suite
from tests.commands import gpu_jobs

SUITE = ('schema = 1\nname = "two"\ncompare = { preset = "strict" }\n'
         '[[case]]\nfamily = "vecadd"\nvariants = ["grid", "vectorized", "torch"]\n'
         'sizes = [{ n = 1024 }, { n = 4096 }]\n'
         '[[case]]\nfamily = "matmul"\nvariants = ["cublas"]\ncontrol = true\n')


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "two.toml"
    path.write_text(SUITE)
    return load_suite(path)


def test_units_follow_the_suite_order(suite):
    assert [(u.number, u.variant, u.size) for u in units_of(suite)] == [
        (0, "grid", {"n": 1024}), (1, "vectorized", {"n": 1024}), (2, "torch", {"n": 1024}),
        (3, "grid", {"n": 4096}), (4, "vectorized", {"n": 4096}), (5, "torch", {"n": 4096}),
        (6, "cublas", None),
    ]


@pytest.mark.parametrize(("text", "count", "expected"), [("all", 2, [0, 1]), ("1", 2, [1]), ("1,0", 4, [1, 0])])
def test_parse_gpus(text, count, expected):
    assert parse_gpus(text, count) == expected


@pytest.mark.parametrize(("text", "count", "error", "message"), [
    ("2", 2, UsageError, "GPU 2 does not exist"), ("0,0", 2, UsageError, "distinct"),
    ("zero", 2, UsageError, "'all' or GPU indices"), ("all", 0, EnvironmentProblem, "no CUDA GPU"),
])
def test_parse_gpus_refuses_bad_lists(text, count, error, message):
    with pytest.raises(error, match=message):
        parse_gpus(text, count)


def test_rows_spread_over_gpu_processes_merge_in_suite_order(suite, tmp_path):
    out = tmp_path / "merged.json"
    seen = []
    merged = run_suite_on_gpus(suite, [0, 1], out, seen.append, timeout_s=30, work=gpu_jobs.fake_unit, prepare=None)
    saved = results.load(out)
    assert [r.id for r in saved.rows] == [r.id for r in merged.rows] == [
        "vecadd/grid/1024", "vecadd/vectorized/1024", "vecadd/torch/1024",
        "vecadd/grid/4096", "vecadd/vectorized/4096", "vecadd/torch/4096", "matmul/cublas/1024"]
    # Each row carries the GPU that timed it, and that process saw only its own GPU.
    for row in saved.rows:
        assert row.gpu["uuid"] == f"GPU-fake-{row.gpu['index']}" and row.gpu["name"] == "Fake GPU"
        assert row.gpu["sm_clock_mhz"] == 1900.0 + row.gpu["index"]
    assert [r.control for r in saved.rows] == [False] * 6 + [True]
    assert saved.compare == {"preset": "strict"}
    assert list(saved.families) == ["vecadd", "matmul"]  # every unit's family, described once
    assert saved.families["vecadd"].rate_kind == "bytes" and saved.families["matmul"].vendor_reference == "cublas"
    assert saved.environment["order"] == "PCI_BUS_ID"
    assert [g["index"] for g in saved.environment["gpus"]] == sorted({r.gpu["index"] for r in saved.rows})
    assert [step.finished for step in seen] == list(range(1, 8)) and {step.total for step in seen} == {7}
    assert {step.within for step in seen} <= {"GPU 0:", "GPU 1:"} and all(step.step == DONE for step in seen)
    assert sorted(step.variant for step in seen) == sorted(f"{r.family}/{r.variant}" for r in saved.rows)
    # each DONE carries its row's outcome for the progress line, with the GPU that ran it
    assert sorted(step.outcome.row_id for step in seen) == sorted(r.id for r in saved.rows)
    assert all(f"GPU {step.outcome.gpu}:" == step.within and step.outcome.status == "ok" for step in seen)


def test_a_gpu_process_that_dies_holding_a_unit_is_one_error_not_a_hang(suite, tmp_path):
    with pytest.raises(EnvironmentProblem, match=r"the process of GPU \d exited \(exit code 3\) while running unit"):
        run_suite_on_gpus(suite, [0, 1], tmp_path / "merged.json", timeout_s=30, work=gpu_jobs.dying_unit, prepare=None)


def test_an_error_on_one_gpu_stops_the_hand_out_and_is_raised(suite, tmp_path):
    out = tmp_path / "merged.json"
    with pytest.raises(EnvironmentProblem, match="no CUDA driver on this fake GPU"):
        run_suite_on_gpus(suite, [0, 1], out, timeout_s=30, work=gpu_jobs.failing_unit, prepare=None)
    saved = results.load(out)  # what finished before the error is kept, in order
    ids = [r.id for r in saved.rows]
    assert ids and not any("/vectorized/" in i for i in ids)
    in_suite_order = ["vecadd/grid/1024", "vecadd/torch/1024", "vecadd/grid/4096", "vecadd/torch/4096",
                      "matmul/cublas/1024"]
    assert ids == [i for i in in_suite_order if i in ids]


def _history(walls):
    """An earlier --gpus results file of the suite above: row id -> the unit wall time it recorded."""
    rows = []
    for row_id, wall in walls.items():
        family, variant, label = row_id.split("/")
        size = dict(zip(["n"] if family == "vecadd" else ["m", "n", "k"], map(int, label.split("x"))))
        rows.append(Row(family=family, variant=variant, size=size, vendor=False, check=CheckResult(status=results.OK),
                        timing=Timing(mode="cold", samples_s=[1e-3], stop_reason="converged", summary=None),
                        gpu={"index": 0, "unit_wall_s": wall}))
    return Results(environment={"gpu_name": "Fake GPU"}, rows=rows)


def test_units_are_handed_out_longest_first_from_the_history_file(suite, tmp_path):
    history = _history({"vecadd/torch/4096": 9.0, "vecadd/grid/1024": 7.0, "matmul/cublas/4096x4096x4096": 40.0,
                        "vecadd/vectorized/1024": 6.0, "vecadd/torch/1024": 5.0, "vecadd/grid/4096": 4.0,
                        "vecadd/vectorized/4096": 3.0})
    out = tmp_path / "one.json"
    handed: list[str] = []

    def unit_saved(step):  # the file is saved before each event: its one new row is the unit just done
        ids = [r.id for r in results.load(out).rows]
        handed.extend(i for i in ids if i not in handed)

    merged = run_suite_on_gpus(suite, [0], out, unit_saved, timeout_s=30, work=gpu_jobs.fake_unit, history=history,
                               prepare=None)
    # one GPU: the family with the most work (matmul, 40 s) first, then vecadd's units longest first
    assert handed == ["matmul/cublas/1024", "vecadd/torch/4096", "vecadd/grid/1024", "vecadd/vectorized/1024",
                      "vecadd/torch/1024", "vecadd/grid/4096", "vecadd/vectorized/4096"]  # units 6, 5, 0, 1, 2, 3, 4
    assert merged.environment["schedule"]["estimates"] == "history"
    assert [r.id for r in merged.rows][:2] == ["vecadd/grid/1024", "vecadd/vectorized/1024"]  # file in suite order


def test_the_merged_file_records_each_gpus_time_and_the_summary_line(suite, tmp_path):
    out = tmp_path / "merged.json"
    run_suite_on_gpus(suite, [0, 1], out, timeout_s=30, work=gpu_jobs.fake_unit, prepare=None)
    saved = results.load(out)
    gpus, schedule = saved.environment["gpus"], saved.environment["schedule"]
    assert sum(g["units"] for g in gpus) == 7
    for g in gpus:
        own = [r.gpu["unit_wall_s"] for r in saved.rows if r.gpu["index"] == g["index"]]
        assert len(own) == g["units"] and g["busy_s"] == pytest.approx(sum(own), abs=0.01)
    for row in saved.rows:  # the fake reports every step: each is recorded, and they add up to the unit
        assert set(row.gpu["steps_s"]) == {"start", "compile", "check", "time", "verify"}, row.id
        assert sum(row.gpu["steps_s"].values()) <= row.gpu["unit_wall_s"] + 0.005
        assert 0 <= g["startup_s"] <= g["wall_s"] <= schedule["wall_s"]
    assert schedule["order"] == "longest first, by family" and schedule["estimates"] == "model"
    assert schedule["one_gpu_estimate_s"] >= sum(g["busy_s"] for g in gpus)
    line = summary_line(saved.environment)
    assert line.startswith(f"{len(gpus)} GPU") and "busiest GPU" in line and "1-GPU estimate" in line


def test_summary_line_in_the_words_the_lead_reads():
    environment = {"gpus": [{"index": 0, "wall_s": 40.2}, {"index": 1, "wall_s": 37.4}],
                   "schedule": {"wall_s": 41.0, "one_gpu_estimate_s": 77.3}}
    assert summary_line(environment) == "2 GPUs: wall 41 s (busiest GPU 40 s, idlest 37 s); 1-GPU estimate 77 s"
    assert summary_line({"gpu_name": "single-GPU file"}) is None


def test_warming_a_worker_starts_it_and_leaves_failures_to_the_first_unit():
    from gpuprof.commands.suite_gpus import warm_worker
    from gpuprof.measure import isolation

    with isolation.Worker(60) as worker:
        warm_worker(worker)  # on a CPU-only machine the harness fails inside; nothing is raised here
        assert worker.started == 1
