"""The CUPTI activity file recorded on the H200 (tests/fixtures/cupti/, its sidecar says how): the
course's nvtx_matmul program through the parser and the nsys-shaped summaries, numbers as printed there."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.commands.nsys_cupti import activity_summary
from gpuprof.parsers import cupti_activity as ca

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "cupti" / "nvtx_matmul-h200.activity.jsonl"


@pytest.fixture(scope="module")
def activity() -> ca.CuptiActivity:
    return ca.read_activity([RECORDED])


def stem(name: str) -> str:
    return name.split("(")[0].removeprefix("void ")


def test_the_recorded_run_has_each_kernel_copy_and_range_of_the_program(activity):
    assert activity.cupti_version == 130001 and not activity.unfinished and activity.dropped == 0
    assert not activity.warnings  # every activity kind was recorded on the H200
    assert sorted(stem(k.name) for k in activity.kernels) == ["naive_matmul"] * 3 + ["tiled_matmul"] * 3
    naive = next(k for k in activity.kernels if stem(k.name) == "naive_matmul")
    assert naive.grid == (64, 64, 1) and naive.block == (16, 16, 1)
    assert [t.operation for t in activity.transfers].count("[CUDA memcpy Host-to-Device]") == 2
    assert [t.operation for t in activity.transfers].count("[CUDA memset]") == 2
    assert {t.bytes for t in activity.transfers if t.kind == "memcpy"} == {1024 * 1024 * 4}
    assert [r.path for r in activity.ranges] == ["setup", "copy_in", "matmul", "matmul/naive", "matmul/tiled",
                                                 "copy_out", "check"]


def test_the_setup_range_opened_before_cuda_started_is_kept(activity):
    """NVTX loads the library at the first range, before cuInit: recording starts there."""
    setup = activity.ranges[0]
    first_call = min(c.start_ns for c in activity.calls)
    assert setup.name == "setup" and setup.start_ns < first_call < setup.end_ns


def test_summaries_match_what_the_device_printed(activity):
    summary = activity_summary(activity, "./nvtx_matmul")
    kernels = {stem(k.name): k for k in summary.kernels}
    assert kernels["naive_matmul"].instances == 3
    assert kernels["naive_matmul"].total_ns == pytest.approx(1.246e6, rel=1e-3)
    assert kernels["tiled_matmul"].total_ns == pytest.approx(0.826e6, rel=1e-3)
    copies = {m.operation: m for m in summary.memcpy or ()}
    assert copies["[CUDA memcpy Host-to-Device]"].total_ns == pytest.approx(803.158e3, rel=1e-5)
    calls = {a.name: a.num_calls for a in summary.api or ()}
    assert calls["cudaLaunchKernel"] == 6 and calls["cudaMemcpy"] == 4 and calls["cudaMalloc"] == 3
    by_range = {g.range: [stem(k.name) for k in g.kernels] for g in summary.kernels_by_range or ()}
    assert by_range == {"matmul/naive": ["naive_matmul"], "matmul/tiled": ["tiled_matmul"]}
    idle = summary.idle
    assert idle is not None and idle.host_calls_known
    assert idle.span_ns == pytest.approx(3.86e6, rel=2e-3) and idle.busy_ns == pytest.approx(3.36e6, rel=2e-3)
    assert (idle.host_bound_gaps, idle.launch_gaps, idle.other_gaps) == (5, 5, 1)
