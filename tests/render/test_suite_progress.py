"""The suite's progress line (render/suite_progress.py): a fake event stream, a fake clock, the exact lines."""

from __future__ import annotations

from gpuprof.progress import DONE, Progress, UnitOutcome
from gpuprof.render.suite_progress import UnitLines, clock_text


def fake_clock(times):
    ticks = iter(times)
    return lambda: next(ticks)


def done(index, total, outcome, within=""):
    return Progress(outcome.variant, DONE, index, total, within=within, outcome=outcome)


WARPTILE = UnitOutcome("matmul", "warptile", "4096x4096x4096", "ok", median_s=2.931e-3, rate=46.92e12,
                       rate_kind="flop")
GRID = UnitOutcome("vecadd", "grid", "67108864", "ok", median_s=2.5e-4, rate=3.221e12, rate_kind="bytes")
NAIVE = UnitOutcome("matmul", "naive[BM=64]", "4096x4096x4096", "timeout",
                    reason="no answer within 300 s during check; its worker process was stopped")


def test_one_line_per_finished_unit_with_elapsed_eta_median_and_rate():
    lines = UnitLines(width=100, clock=fake_clock([0.0, 10.0, 41.0, 50.0, 60.0]))
    stream = [
        Progress("grid", "compile", 0, 3),  # steps of the work: no line
        Progress("grid", "time", 0, 3),
        done(0, 3, GRID, within="case 1/2 vecadd"),  # at 10 s: 10 s a unit, 2 left
        Progress("warptile", "check", 1, 3),
        done(1, 3, WARPTILE),  # at 41 s: 20.5 s a unit, 1 left
        done(2, 3, NAIVE),  # at 50 s: the last
    ]
    assert [line for line in map(lines, stream) if line is not None] == [
        "[1/3  0:10 ETA  0:20] vecadd grid 67108864  OK  250 µs  3221 GB/s",
        "[2/3  0:41 ETA  0:20] matmul warptile 4096x4096x4096  OK  2.931 ms  46.92 TFLOP/s",
        ("[3/3  0:50 ETA  0:00] matmul naive[BM=64] 4096x4096x4096  TIMEOUT  no answer within 300 s during\n"
         "                      check; its worker process was stopped"),
    ]  # folded at 100 columns, under the unit: nothing cut


def test_a_log_gets_whole_lines_and_a_gpu_run_names_the_gpu():
    lines = UnitLines(width=None, clock=fake_clock([0.0, 5.0]))
    gpu_naive = UnitOutcome(**{**NAIVE.__dict__, "gpu": 1})
    assert lines(done(0, 12, gpu_naive, within="GPU 1:")) == (
        "[ 1/12  0:05 ETA  0:55] GPU 1  matmul naive[BM=64] 4096x4096x4096  TIMEOUT  no answer within 300 s during "
        "check; its worker process was stopped")


def test_recorded_unit_times_weigh_the_eta():
    """A slow unit first (--gpus hands out the longest first): 90 of the 100 expected seconds are done
    after 45 s, so 10 are left at that pace (5 s), not two more units at the mean (90 s)."""
    expected = {"matmul/warptile/4096x4096x4096": 90.0, "vecadd/grid/67108864": 5.0, "vecadd/vectorized/67108864": 5.0}
    lines = UnitLines(expected, clock=fake_clock([0.0, 45.0]))
    assert lines(done(0, 3, WARPTILE)).startswith("[1/3  0:45 ETA  0:05]")


def test_clock_text():
    assert [clock_text(s) for s in (0, 41.4, 112, 3723)] == ["0:00", "0:41", "1:52", "1:02:03"]
