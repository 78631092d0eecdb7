"""`gpuprof suite --gpus`: scheduling and merging across GPU processes, with fake per-GPU work (no GPU)."""

from __future__ import annotations

import pytest

from gpuprof import results
from gpuprof.commands.suite_gpus import parse_gpus, run_suite_on_gpus, units_of
from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.suite_file import load_suite
from tests.core import gpu_jobs

SUITE = ('schema = 1\nname = "two"\ncompare = { preset = "strict" }\n'
         '[[case]]\nfamily = "vecadd"\nvariants = ["grid", "vectorized", "torch"]\nsizes = [{ n = 1024 }, { n = 4096 }]\n'
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
    merged = run_suite_on_gpus(suite, [0, 1], out, lambda done, total, unit, gpu: seen.append((done, total, gpu)),
                               timeout_s=30, work=gpu_jobs.fake_unit)
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
    assert saved.environment["order"] == "PCI_BUS_ID"
    assert [g["index"] for g in saved.environment["gpus"]] == sorted({r.gpu["index"] for r in saved.rows})
    assert [d for d, _, _ in seen] == list(range(1, 8)) and {t for _, t, _ in seen} == {7}


def test_an_error_on_one_gpu_stops_the_hand_out_and_is_raised(suite, tmp_path):
    out = tmp_path / "merged.json"
    with pytest.raises(EnvironmentProblem, match="no CUDA driver on this fake GPU"):
        run_suite_on_gpus(suite, [0, 1], out, timeout_s=30, work=gpu_jobs.failing_unit)
    saved = results.load(out)  # what finished before the error is kept, in order
    assert "vecadd/vectorized/1024" not in [r.id for r in saved.rows]
    assert saved.rows[0].id == "vecadd/grid/1024"
