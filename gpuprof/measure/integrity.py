"""Audits run after timing: did the timed launches do the variant's work, on the stream timed?

Two ways a variant can pass its check and still be timed doing nothing:

- its work runs on another stream than the one it was given (a Triton or API callable that
  launches on PyTorch's default stream or its own): the events on the timing stream bracket an
  empty launch. `off_stream` finds it by timing one launch two ways. The CUDA events on the timing
  stream see only that stream; cudaDeviceSynchronize waits for every stream of the device. Once
  the host has finished enqueuing the launch, the device can still be busy with at most the work
  the events bracket (plus a sync latency): the "tail" from the end of enqueuing to the end of the
  device-wide sync is <= the event time. Work elsewhere shows as a tail far above the event time.
  This needs no CUPTI and no knowledge of which stream was used; it cannot see off-stream work that
  finished while the host was still enqueuing (work shorter than the host's own launch time), which
  is why it only flags tails above OFF_STREAM_MIN_S. Trials are repeated and the smallest excess
  is used, so one OS hiccup during a sync cannot flag a correct variant.
- it skips its work when the output already holds a result (it caches, or checks a flag): the
  timed launches, after the first, find the output written. `skips_when_written` times a launch
  on a freshly poisoned output and one on the written output (both L2-cold); a correct kernel takes
  the same time, a caching one is much faster the second time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from gpuprof.gpu import cupy
from gpuprof.measure.timing import time_one_cold

OFF_STREAM_MIN_S = 100e-6  # device work left after enqueuing, beyond the event time, that counts
OFF_STREAM_RATIO = 0.5  # ... and beyond this fraction of the event time
SKIP_RATIO = 0.5  # a launch on a written output faster than this fraction of a poisoned one ...
SKIP_MIN_S = 20e-6  # ... and faster by at least this much: it skipped its work
TRIALS = 3
LONG_LAUNCH_S = 0.1  # launches longer than this are audited once, not TRIALS times (naive matmul)

OFF_STREAM_REASON = "its work ran on another stream than the one timed"
SKIPS_REASON = "does less work when its output already holds a result (caches it or skips work): timed doing nothing"

Launch = Callable[[Any], None]


def off_stream_verdict(trials: list[tuple[float, float]]) -> bool:
    """trials: (seconds between the events on the timing stream, seconds the device stayed busy
    after the host finished enqueuing). True when every trial left far more work than was timed."""
    if not trials:
        return False
    excess = min(tail - on_stream - max(OFF_STREAM_MIN_S, OFF_STREAM_RATIO * on_stream) for on_stream, tail in trials)
    return excess > 0


def skips_verdict(poisoned_s: list[float], written_s: list[float]) -> bool:
    """True when launches on an already-written output are much faster than on a poisoned one."""
    if not poisoned_s or not written_s:
        return False
    poisoned, written = statistics.median(poisoned_s), statistics.median(written_s)
    return written < SKIP_RATIO * poisoned and poisoned - written > SKIP_MIN_S


def off_stream(launch: Launch, harness: Any, trials: int = TRIALS) -> str | None:
    """OFF_STREAM_REASON (with the figures) when the launch's work did not stay on harness.stream."""
    cp = cupy()
    stream = harness.stream
    device = cp.cuda.Device()
    start, end = harness.events(2)
    measured = []
    for _ in range(trials):
        device.synchronize()
        start.record(stream)
        launch(stream)
        enqueued = time.perf_counter()
        end.record(stream)
        device.synchronize()  # every stream of the device, not only the timed one
        tail = time.perf_counter() - enqueued
        measured.append((cp.cuda.get_elapsed_time(start, end) / 1e3, tail))
        if measured[-1][0] > LONG_LAUNCH_S:
            break  # a hiccup of half a long launch is unlikely: one trial is enough
    if not off_stream_verdict(measured):
        return None
    on_stream, tail = min(measured, key=lambda m: m[1] - m[0])
    return (f"{OFF_STREAM_REASON}: the events saw {on_stream * 1e6:.1f} µs, but the device stayed busy "
            f"{tail * 1e6:.1f} µs after the launch was queued")


def skips_when_written(launch: Launch, poison: Callable[[], None], harness: Any, trials: int = TRIALS) -> str | None:
    """SKIPS_REASON (with the figures) when a launch on a written output is much faster."""
    poisoned, written = [], []
    for _ in range(trials):
        poison()
        poisoned.append(_time_cold(launch, harness))
        written.append(_time_cold(launch, harness))
        if poisoned[-1] > LONG_LAUNCH_S:
            break  # noise is far below the 2x at this length: one pair is enough
    if not skips_verdict(poisoned, written):
        return None
    return (f"{SKIPS_REASON} ({statistics.median(written) * 1e6:.1f} µs on a written output, "
            f"{statistics.median(poisoned) * 1e6:.1f} µs on a poisoned one)")


def _time_cold(launch: Launch, harness: Any) -> float:
    cupy().cuda.Device().synchronize()  # the poison ran on CuPy's default stream, not the timed one
    return time_one_cold(launch, harness)
