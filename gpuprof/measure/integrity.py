"""Audits run after timing: did the timed launches do the variant's work, on the stream timed?

Two ways a variant can pass its check and still be timed doing nothing:

- its work runs on another stream than the one it was given (a Triton or API callable that
  launches on PyTorch's default stream or its own): the events on the timing stream bracket an
  empty launch, or only the host's time spent queuing it. `off_stream` finds it two ways.
  Where PyTorch is loaded (its profiler reads CUPTI's activity records, as nsys does), one launch is
  queued on the held timing stream between two marker kernels, and every kernel, copy or memset of
  the launch must fall between them: work that ran while the stream was held, or after the second
  marker, was not ordered by the timed stream and is named, with its stream. (Side streams forked
  from the timed stream and joined back are ordered by it, and pass.) Without PyTorch, the
  launch is timed two ways: the host polls the end event on the timing stream until it completes,
  then waits for the whole device (cudaDeviceSynchronize waits for every stream). A launch that
  stayed on the timing stream leaves the device idle once its end event completes (a sync latency
  apart); off-stream work keeps it busy after that. This needs no knowledge of which stream was
  used; it cannot see off-stream work shorter than OFF_STREAM_MIN_S. Trials are repeated and the
  smallest excess is used, so one OS hiccup during a sync cannot flag a correct variant.
- it skips its work when the output already holds a result (it caches, or checks a flag): the
  timed launches, after the first, find the output written. `skips_when_written` times a launch
  on a freshly poisoned output and one on the written output (both L2-cold, queued behind a hold so
  the events see device time only: the host's queuing time varies by 2x between two calls of the
  same PyTorch op, which flagged cuBLAS and torch rows on the H100); a correct kernel takes the
  same time, a caching one is much faster the second time.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuprof.gpu import cupy
from gpuprof.measure.timing import time_one_cold, time_one_held

OFF_STREAM_MIN_S = 50e-6  # device work left after the timed stream finished that counts ...
OFF_STREAM_RATIO = 0.25  # ... and beyond this fraction of the event time
SKIP_RATIO = 0.5  # a launch on a written output faster than this fraction of a poisoned one ...
SKIP_MIN_S = 20e-6  # ... and faster by at least this much: it skipped its work
TRIALS = 3
LONG_LAUNCH_S = 0.1  # launches longer than this are audited once, not TRIALS times (naive matmul)

OFF_STREAM_REASON = "its work ran on another stream than the one timed"
SKIPS_REASON = "does less work when its output already holds a result (caches it or skips work): timed doing nothing"

Launch = Callable[[Any], None]
_profiler_started = False  # CUPTI enabled once in this process (see _cupti_activities)


def off_stream_verdict(trials: list[tuple[float, float]]) -> bool:
    """trials: (seconds between the events on the timing stream, seconds the device stayed busy
    after the end event on the timing stream completed). True when every trial left work behind."""
    if not trials:
        return False
    excess = min(after - max(OFF_STREAM_MIN_S, OFF_STREAM_RATIO * on_stream) for on_stream, after in trials)
    return excess > 0


def escaped_work(activities: list[tuple[str, int, float, float]],
                 marker: str = "gpuprof_clock_probe") -> list[tuple[str, int]]:
    """(name, stream) of the GPU activities of one launch that the timed stream did not bracket.

    activities: CUPTI records (name, stream, start, end) of a launch queued on a held timed stream
    between two marker kernels. Work the timed stream orders (its own, or side streams forked from
    it and joined back, as a chunked copy pipeline does) starts after the first marker and ends
    before the second starts; work elsewhere ran while the stream was held, or after the second
    marker. Empty when the markers are missing (nothing can be said)."""
    markers = sorted((start, end) for name, _, start, end in activities if name == marker)
    if len(markers) < 2:
        return []
    first_start, last_start = markers[0][0], markers[-1][0]
    slack = 1e-3  # µs: the GPU timer's resolution is finer; order, not duration, is tested
    return [(name, stream) for name, stream, start, end in activities
            if not name.startswith("gpuprof_") and (start < first_start - slack or end > last_start + slack)]


def skips_verdict(poisoned_s: list[float], written_s: list[float]) -> bool:
    """True when launches on an already-written output are much faster than on a poisoned one."""
    if not poisoned_s or not written_s:
        return False
    poisoned, written = statistics.median(poisoned_s), statistics.median(written_s)
    return written < SKIP_RATIO * poisoned and poisoned - written > SKIP_MIN_S


def off_stream(launch: Launch, harness: Any, trials: int = TRIALS, cupti: bool = True) -> str | None:
    """OFF_STREAM_REASON (with the evidence) when the launch's work did not stay on harness.stream."""
    # One call before anything is judged: a first call compiles and loads its kernels (PyTorch
    # loads modules lazily), which inflated the first trial's event span on the H100 until the
    # side-stream work it hid fell under the ratio, and blocked the host inside the CUPTI window.
    launch(harness.stream)
    cupy().cuda.Device().synchronize()
    records = _cupti_activities(launch, harness) if cupti else None
    if records is not None:
        elsewhere = escaped_work(records)
        if not elsewhere:
            return None
        names = sorted({_short(name) for name, _ in elsewhere})
        streams = sorted({stream for _, stream in elsewhere})
        shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        on_streams = ", ".join(map(str, streams))
        return (f"{OFF_STREAM_REASON}: CUPTI saw {len(elsewhere)} of its GPU operations ({shown}) "
                f"on stream {on_streams} outside the timed stream's span")
    measured: list[tuple[float, float]] = []
    while len(measured) < trials:
        measured.append(_timed_then_idle(launch, harness))
        if measured[-1][0] > LONG_LAUNCH_S:
            break  # a hiccup of half a long launch is unlikely: one trial is enough
    if not off_stream_verdict(measured):
        return None
    on_stream, after = min(measured, key=lambda m: m[1] - max(OFF_STREAM_MIN_S, OFF_STREAM_RATIO * m[0]))
    return (f"{OFF_STREAM_REASON}: the events saw {on_stream * 1e6:.1f} µs, but the device stayed busy "
            f"{after * 1e6:.1f} µs after the timed stream had finished")


def _timed_then_idle(launch: Launch, harness: Any) -> tuple[float, float]:
    """(event seconds, seconds the device stayed busy after the end event completed)."""
    cp = cupy()
    stream = harness.stream
    device = cp.cuda.Device()
    start, end = harness.events(2)
    device.synchronize()
    start.record(stream)
    launch(stream)
    end.record(stream)
    while not end.done:  # poll: the moment the timed stream is done, as closely as the host can see it
        pass
    finished = time.perf_counter()
    device.synchronize()  # every stream of the device, not only the timed one
    return cp.cuda.get_elapsed_time(start, end) / 1e3, time.perf_counter() - finished


# The Chrome trace's categories for work a stream orders.
_STREAM_WORK = ("kernel", "gpu_memcpy", "gpu_memset")


def _cupti_activities(launch: Launch, harness: Any) -> list[tuple[str, int, float, float]] | None:
    """(name, CUPTI stream id, start µs, end µs) of every kernel, copy and memset of one launch,
    queued on the held timing stream between two clock-probe kernels; None without PyTorch's
    profiler (or when it cannot run here, e.g. another CUPTI client holds the activity API)."""
    torch = sys.modules.get("torch")
    if torch is None or not getattr(torch, "cuda", None) or not torch.cuda.is_available():
        return None
    try:
        from torch.profiler import ProfilerActivity, profile

        from gpuprof.measure.timing import quiet_torch_profiler

        # CUPTI's first enabling in a process waits for the device: behind the held stream it made
        # the host sit out the whole hold (seen on the H100), so it is enabled once beforehand.
        global _profiler_started
        if not _profiler_started:
            with quiet_torch_profiler(), profile(activities=[ProfilerActivity.CUDA]):
                harness.probe_clock()
                cupy().cuda.Device().synchronize()
            _profiler_started = True
        for _attempt in range(2):  # a hold that gave way once (the host was held up) is tried again
            with quiet_torch_profiler(), profile(activities=[ProfilerActivity.CUDA]) as prof:
                harness.hold()  # nothing ordered by the timed stream can start before release
                harness.probe_clock()
                launch(harness.stream)
                harness.probe_clock(after=True)
                harness.release()
                cupy().cuda.Device().synchronize()
            # Outside the profile: reading the flag is a copy and a memset of the harness's own,
            # which the H100 run showed CUPTI counting against the launch.
            if not harness.took_too_long():
                break
        else:
            return None  # the host was blocked until the hold gave way, twice: the order proves nothing
        with tempfile.TemporaryDirectory(prefix="gpuprof-cupti-") as tmp:
            trace = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(trace))
            events = json.loads(trace.read_text(encoding="utf-8")).get("traceEvents", [])
    except Exception:  # noqa: BLE001  # the profiler is a convenience here: the timing audit below still runs
        return None
    records: list[tuple[str, int, float, float]] = []
    for e in events:
        if e.get("cat") not in _STREAM_WORK or "stream" not in e.get("args", {}) or "ts" not in e:
            continue
        start = float(e["ts"])
        records.append((str(e.get("name", "")), int(e["args"]["stream"]), start, start + float(e.get("dur", 0.0))))
    return records or None


def _short(name: str) -> str:
    name = name.removeprefix("void ")
    return name.split("(")[0].split("<")[0][:60]


def skips_when_written(launch: Launch, poison: Callable[[], None], harness: Any, trials: int = TRIALS,
                       held: bool = True) -> str | None:
    """SKIPS_REASON (with the figures) when a launch on a written output is much faster.
    held=False for a host-synchronous unit (its copies would wait out the hold)."""
    poisoned, written = [], []
    for _ in range(trials):
        poison()
        poisoned.append(_time_cold(launch, harness, held))
        written.append(_time_cold(launch, harness, held))
        if poisoned[-1] > LONG_LAUNCH_S:
            break  # noise is far below the 2x at this length: one pair is enough
    if not skips_verdict(poisoned, written):
        return None
    return (f"{SKIPS_REASON} ({statistics.median(written) * 1e6:.1f} µs on a written output, "
            f"{statistics.median(poisoned) * 1e6:.1f} µs on a poisoned one)")


def _time_cold(launch: Launch, harness: Any, held: bool = True) -> float:
    """One launch's seconds; both timers run a launch's untimed reset first (managed memory sent
    back to the host), as before each timed sample: else the second launch finds its data moved."""
    cupy().cuda.Device().synchronize()  # the poison ran on CuPy's default stream, not the timed one
    seconds = time_one_held(launch, harness) if held else None
    return seconds if seconds is not None else time_one_cold(launch, harness)
