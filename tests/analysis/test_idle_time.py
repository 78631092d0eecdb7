"""The idle-time breakdown (analysis/idle_time.py): each gap in its bin by what the host was doing,
the copy/compute overlap, on hand-built timelines and on traces recorded on the H100."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.analysis.idle_time import LAUNCH_GAP_NS, idle_breakdown
from gpuprof.parsers import nsys_sqlite, torch_trace
from gpuprof.parsers.gpu_activity import GpuOp

TOOLS = Path(__file__).resolve().parents[1] / "fixtures" / "tools"
US = 1_000.0


def kernel(start_us: float, end_us: float, queued_us: float | None = None) -> GpuOp:
    return GpuOp("kernel", start_us * US, end_us * US, None if queued_us is None else queued_us * US)


def test_each_gap_goes_in_its_bin():
    ops = [
        kernel(0, 100, queued_us=-50),
        kernel(105, 200, queued_us=10),  # queued long before: a 5 µs launch gap
        kernel(1200, 1300, queued_us=1190),  # queued 990 µs into the gap: the GPU waited for the host
        kernel(2300, 2400, queued_us=250),  # queued in time, 1 ms idle: waiting on something else
    ]
    idle = idle_breakdown(ops)
    assert idle is not None
    assert idle.span_ns == 2400 * US and idle.busy_ns == 395 * US and idle.idle_ns == 2005 * US
    assert (idle.launch_gaps, idle.launch_gap_ns) == (1, 5 * US)
    assert (idle.host_bound_gaps, idle.host_bound_ns) == (1, 1000 * US)
    assert (idle.other_gaps, idle.other_ns) == (1, 1000 * US)
    assert idle.longest_gap_ns == 1000 * US and idle.host_calls_known
    assert idle.pct(idle.idle_ns) == pytest.approx(100 * 2005 / 2400)


def test_without_host_calls_only_the_length_decides():
    idle = idle_breakdown([kernel(0, 10), kernel(20, 30), kernel(30 + LAUNCH_GAP_NS / US + 1, 200)])
    assert idle is not None and not idle.host_calls_known
    assert (idle.launch_gaps, idle.other_gaps, idle.host_bound_gaps) == (1, 1, 0)


def test_overlapping_operations_are_busy_once_and_copies_overlap_kernels():
    ops = [kernel(0, 100), GpuOp("memcpy", 50 * US, 150 * US), GpuOp("memcpy", 140 * US, 160 * US),
           GpuOp("memset", 160 * US, 170 * US), kernel(90, 120)]
    idle = idle_breakdown(ops)
    assert idle is not None
    assert idle.busy_ns == idle.span_ns == 170 * US and idle.idle_ns == 0
    assert idle.copy_ns == 110 * US and idle.kernel_ns == 120 * US
    assert idle.overlap_ns == 70 * US  # copies during kernels: 50..120


def test_an_empty_timeline_has_no_breakdown():
    assert idle_breakdown([]) is None


def test_recorded_torch_trace_links_operations_to_their_host_calls():
    trace = torch_trace.read_trace(TOOLS / "torch-2.11.0__vecadd-torch.trace.json")
    kernels = [op for op in trace.ops if op.kind == "kernel"]
    assert len(kernels) == sum(len(d) for d in trace.kernels.values())
    assert all(op.queued_ns is not None and op.queued_ns <= op.start_ns for op in kernels)
    idle = idle_breakdown(trace.ops)
    assert idle is not None and idle.host_bound_gaps >= 1  # the script's torch kernels wait for Python
    assert idle.host_bound_ns + idle.launch_gap_ns + idle.other_ns == pytest.approx(idle.idle_ns)


def test_recorded_nsys_export_gives_operations_with_their_host_calls():
    ops = nsys_sqlite.read_sqlite_gpu_ops(TOOLS / "nsys_2025.3.2_export_small.sqlite")
    assert sorted({op.kind for op in ops}) == ["kernel", "memcpy", "memset"]
    assert len(ops) == 14 and all(op.queued_ns is not None and op.queued_ns <= op.start_ns for op in ops)
    idle = idle_breakdown(ops)
    assert idle is not None and idle.copy_ns > 0
    assert idle.host_bound_ns + idle.launch_gap_ns + idle.other_ns == pytest.approx(idle.idle_ns)
