"""The timing engine: cold / hot / graph sample loops -> Timing (raw samples, clocks, stop reason).

Two ways to take a sample:

- Held (every family's default): the harness holds the stream with a spin kernel until the host has
  queued a whole batch, so the events bracket only GPU work and never the host's launch latency.
- Host-synchronous (a variant whose manifest says `options = { host_synchronous = true }`: the
  transfers family). Its unit blocks the host inside the launch: a cudaMemcpy from pageable memory
  waits for the stream and stages the data through the CPU, a prefetch of managed memory may block.
  Under the hold such a call would wait for a stream that waits for the host: a stall until the
  hold's timeout, then a dropped batch. So these variants are timed one unit at a time, with no
  hold: the stream is drained, the start event is recorded on the idle stream, the unit runs
  (host-side staging included: the GPU sits between the events while the host copies, exactly as
  the program waits for it), the end event is recorded and waited for. The sample is what the
  program sees from the moment it issues the unit to the moment its result is on the host,
  including a few µs of API latency (negligible at the family's millisecond units). Before each
  sample the launch's untimed reset (families.interface.UNTIMED_RESET, e.g. managed memory prefetched
  back to the host) runs, and in cold mode the L2 flush, both before the stream is drained.
  Graph and CUPTI modes do not apply to such a unit (a host-synchronous copy cannot be captured,
  and CUPTI's kernel records miss copies): they are refused with a reason.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuprof.analysis import stats
from gpuprof.analysis.order_stats import median_resolution
from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.families.interface import UNTIMED_RESET
from gpuprof.gpu import cupy, device_info
from gpuprof.measure import throttle
from gpuprof.results import Timing

Launch = Callable[[Any], None]  # launch(stream): enqueue one run of the variant on that stream

MODES = {
    "cold": "L2 flushed (by a clean read) before each sample; one launch between two events",
    "hot": "back-to-back launches, L2 warm; one launch between two events",
    "graph": "CUDA graph of R back-to-back launches, L2 warm; replay time / R",
    "cupti": "L2 flushed before each sample; the kernels' own start-to-end GPU timestamps from CUPTI "
             "(torch.profiler), summed over the kernels of one launch: no event or launch overhead",
}

MAX_BATCH = 64  # queued ops stay far below the launch queue depth (~1024), so the host never blocks
BATCH_GPU_SECONDS = 0.05
RELEASE_TIMEOUT_NS = 2_000_000_000
MAX_DROPPED_BATCHES = 3
CLOCK_PROBE_NS = 50_000
GRAPH_REPLAY_SECONDS = 500e-6  # graph replays long enough that event overhead is < 1 %
HOST_SYNCHRONOUS_MODES = ("cold", "hot")  # one unit at a time from an idle stream (module docstring)
HOST_SYNCHRONOUS_NOTE = ("host-synchronous unit: no stream hold; each sample from an idle stream to its end "
                         "event, host-side staging and API latency included")


@dataclass(frozen=True)
class TimingPolicy:
    mode: str = "cold"
    min_samples: int = 10
    max_samples: int = 1000
    max_time_s: float = 2.0
    target_spread: float = 0.005
    warmup: int = 3
    discard_throttled: bool = False  # drop batches NVML saw throttled and sample again
    # Aim for the CI gate (a suite sets these from its compare preset): keep sampling until the
    # median's (1 - resolution_alpha) interval is within ± target_resolution, up to resolution_budget_s.
    target_resolution: float | None = None
    resolution_alpha: float = 0.01
    resolution_budget_s: float = 20.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"unknown timing mode '{self.mode}'; choose from: {', '.join(MODES)}")
        if self.min_samples < 1 or self.max_samples < self.min_samples:
            raise UsageError("need 1 <= min_samples <= max_samples")
        if not self.max_time_s > 0 or not self.target_spread > 0:
            raise UsageError("max_time_s and target_spread must be positive")
        if self.target_resolution is not None and not 0 < self.target_resolution < 1:
            raise UsageError("target_resolution must be between 0 and 1 (0.01 = ±1 %)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"mode_description": MODES[self.mode]}


class Harness:
    """Device-side helpers shared by every measurement in a process: L2 flush, hold, clock probe."""

    def __init__(self) -> None:
        cp = cupy()
        info = device_info()
        self.stream = cp.cuda.Stream(non_blocking=True)
        module = cp.RawModule(code=(Path(__file__).parent / "harness.cu").read_text(), options=("--std=c++17",))
        self._block = module.get_function("gpuprof_block_until_released")
        self._probe = module.get_function("gpuprof_clock_probe")
        self._flush = module.get_function("gpuprof_flush_l2")
        # Twice the L2: replacement is not strict LRU, so one L2's worth can leave lines behind.
        self.flush_bytes = 2 * info.l2_bytes
        self._flush_buf = cp.full(self.flush_bytes // 16 * 16, 0x5A, dtype=cp.uint8)
        self._flush_grid = info.sm_count * 4
        self._sink = cp.zeros(1, dtype=cp.int32)
        self._timed_out = cp.zeros(1, dtype=cp.int32)
        self._clock = cp.zeros(2, dtype=cp.uint64)  # probed before a batch (the GPU was idle)
        self._clock_after = cp.zeros(2, dtype=cp.uint64)  # probed right after its last sample
        self.nvml = throttle.Monitor.for_device(info.uuid, info.index)
        # Mapped pinned memory: the host writes the release flag, the blocker kernel reads it.
        rt = cp.cuda.runtime
        self._release_mem = cp.cuda.PinnedMemory(64, rt.hostAllocMapped | rt.hostAllocPortable)
        self._release = np.frombuffer(cp.cuda.PinnedMemoryPointer(self._release_mem, 0), dtype=np.int32, count=1)
        self._events: list[Any] = []

    def flush(self) -> None:
        count = self.flush_bytes // 16
        self._flush((self._flush_grid,), (512,), (self._flush_buf, np.int64(count), self._sink), stream=self.stream)

    def hold(self) -> None:
        self._release[0] = 0
        self._block((1,), (1,), (np.uint64(self._release_mem.ptr), self._timed_out,
                                 np.uint64(RELEASE_TIMEOUT_NS)), stream=self.stream)

    def release(self) -> None:
        self._release[0] = 1

    def probe_clock(self, after: bool = False) -> None:
        buffer = self._clock_after if after else self._clock
        self._probe((1,), (1,), (buffer, np.uint64(CLOCK_PROBE_NS)), stream=self.stream)

    def clock_mhz(self, after: bool = True) -> float:
        """The probed SM clock; after=True: the probe queued right behind the batch's last
        sample, i.e. the clock the GPU was running the batch at, not the idle clock before it."""
        self.stream.synchronize()  # the probe runs behind the batch's last event
        cycles, ns = (int(x) for x in (self._clock_after if after else self._clock).get())
        return cycles / ns * 1e3 if ns else math.nan

    def events(self, count: int) -> list[Any]:
        cp = cupy()
        while len(self._events) < count:
            self._events.append(cp.cuda.Event())
        return self._events[:count]

    def took_too_long(self) -> bool:
        flag = bool(self._timed_out.get()[0])
        self._timed_out.fill(0)
        return flag


_shared: Harness | None = None


def shared_harness() -> Harness:
    """One harness per process, so its flush buffer and compiled helpers are made once."""
    global _shared
    if _shared is None:
        _shared = Harness()
    return _shared


def measure(launch: Launch, harness: Harness, policy: TimingPolicy, *, host_synchronous: bool = False) -> Timing:
    """Warm up, then take batches of samples until the spread is small or the budget is spent.
    host_synchronous: the unit blocks the host (the module docstring says how it is timed)."""
    if host_synchronous and policy.mode not in HOST_SYNCHRONOUS_MODES:
        raise EnvironmentProblem(
            f"a host-synchronous variant cannot be timed in {policy.mode} mode (its host-side copies cannot be "
            f"captured in a graph, and CUPTI's kernel records miss them); use --timing "
            f"{' or '.join(HOST_SYNCHRONOUS_MODES)}")
    if getattr(launch, UNTIMED_RESET, None) is not None and not host_synchronous:
        raise UsageError("a launch with an untimed reset must be host-synchronous "
                         "(options = { host_synchronous = true } in its manifest): the held batch cannot run it")
    stream = harness.stream
    for _ in range(policy.warmup):
        run_untimed_reset(launch, stream)
        launch(stream)
    stream.synchronize()
    per_launch_s = time_one_cold(launch, harness)
    args = (launch, harness, policy.mode, per_launch_s)  # the held path's call, as before host_synchronous
    sample_runner, per_sample, note, launches = (_sampler(*args, host_synchronous=True) if host_synchronous
                                                 else _sampler(*args))
    gpu_per_sample_s = per_sample + (harness.flush_bytes / 2e12 if policy.mode == "cold" else 0.0)

    samples: list[float] = []
    clocks: list[float] = []
    nvml_clocks: list[float] = []
    throttled: list[bool] = []
    reasons: set[str] = set()
    discarded = 0
    started = time.perf_counter()
    stop_reason = ""
    dropped = 0
    cap = MAX_BATCH  # samples queued behind one hold; lowered when the host cannot queue them in time
    while not stop_reason:
        want = max(policy.min_samples - len(samples), 1)
        batch = int(min(cap, policy.max_samples - len(samples),
                        max(want, BATCH_GPU_SECONDS // max(gpu_per_sample_s, 1e-9))))
        harness.nvml.batch()  # forget readings from before this batch
        harness.nvml.read()
        got = sample_runner(batch)
        harness.nvml.read()
        reading = harness.nvml.batch()
        if harness.took_too_long():
            # The host was too slow to queue the batch, so its samples may hold launch gaps: drop
            # them and queue fewer at a time (a Python-driven training step queues ~30 launches
            # per sample: on the H100 a whole batch of them outlasted the hold and nothing was
            # timed), but never loop forever on a host too slow for even one sample.
            if batch > 1:
                cap = max(1, batch // 4)
                continue
            dropped += 1
            if dropped < MAX_DROPPED_BATCHES:
                continue
            stop_reason = "host_too_slow_to_queue_batches"
            break
        reasons.update(reading.reasons)
        if reading.throttled and policy.discard_throttled:
            discarded += len(got)  # sample again; the budget below still ends a GPU that stays throttled
            if time.perf_counter() - started >= 10 * policy.max_time_s:
                stop_reason = "throttled_throughout"
            continue
        samples += got
        clocks += [harness.clock_mhz()] * len(got)
        if reading.sm_clock_mhz is not None:
            nvml_clocks += [reading.sm_clock_mhz] * len(got)
        if harness.nvml.available:
            throttled += [reading.throttled] * len(got)
        stop_reason = _stop_reason(samples, policy, time.perf_counter() - started)
    return Timing(mode=policy.mode, samples_s=samples, stop_reason=stop_reason,
                  summary=stats.summarize(samples) if samples else None, sm_clock_mhz=clocks,
                  launches_per_sample=launches, note=note, nvml_sm_clock_mhz=nvml_clocks,
                  throttled=throttled, throttle_reasons=sorted(reasons), discarded_throttled=discarded,
                  resolution=recorded_resolution(samples, policy))


def _stop_reason(samples: list[float], policy: TimingPolicy, elapsed_s: float) -> str:
    """Stop when the spread is small (and, aiming for the gate, the median resolved), or a budget is spent.

    With target_resolution the time budget stretches from max_time_s to resolution_budget_s until
    the median is resolved: a 100 ms kernel with 3 % noise needs ~100 samples, not 20.
    """
    n = len(samples)
    resolved = policy.target_resolution is None or (
        n >= policy.min_samples and median_resolution(samples, policy.resolution_alpha) <= policy.target_resolution)
    if n >= policy.min_samples and stats.robust_rel_spread(samples) <= policy.target_spread and resolved:
        return "converged"
    if n >= policy.max_samples:
        return "max_samples"
    if elapsed_s >= policy.max_time_s and n >= policy.min_samples and resolved:
        return "time_budget"
    if elapsed_s >= max(policy.max_time_s, policy.resolution_budget_s) and n >= policy.min_samples:
        return "resolution_budget"
    if elapsed_s >= 10 * policy.max_time_s:
        return "time_budget_before_min_samples"
    return ""


def recorded_resolution(samples: list[float], policy: TimingPolicy) -> float | None:
    """The median's relative half-width at the policy's level, for the results file (None: too few samples)."""
    if not samples:
        return None
    value = median_resolution(samples, policy.resolution_alpha)
    return value if math.isfinite(value) else None


def run_untimed_reset(launch: Launch, stream: Any) -> None:
    """The launch's untimed reset, if it has one (families.interface.UNTIMED_RESET), then the stream drained:
    the state every sample must start from (managed pages back on the host), never timed."""
    reset = getattr(launch, UNTIMED_RESET, None)
    if reset is not None:
        reset(stream)
        stream.synchronize()


def time_one_cold(launch: Launch, harness: Harness) -> float:
    """Seconds one launch takes (L2 cold): sizes batches and graphs, and the integrity audits."""
    start, end = harness.events(2)
    run_untimed_reset(launch, harness.stream)
    harness.flush()
    start.record(harness.stream)
    launch(harness.stream)
    end.record(harness.stream)
    end.synchronize()
    return _elapsed_s(start, end)


def time_one_held(launch: Launch, harness: Harness) -> float | None:
    """Device seconds of one launch (L2 cold), queued behind a hold so the events bracket only the
    device's work: unheld, a callable's event span is mostly the host queuing it (20-100 µs of
    Python and launch latency on the H100, varying from call to call), which is not the work.
    None when the launch waited on the host past the hold (a host-synchronous unit)."""
    start, end = harness.events(2)
    run_untimed_reset(launch, harness.stream)
    harness.hold()
    harness.flush()
    start.record(harness.stream)
    launch(harness.stream)
    end.record(harness.stream)
    harness.release()
    end.synchronize()
    if harness.took_too_long():
        return None
    return _elapsed_s(start, end)


def _elapsed_s(start: Any, end: Any) -> float:
    return cupy().cuda.get_elapsed_time(start, end) / 1e3


def _sampler(launch: Launch, harness: Harness, mode: str, per_launch_s: float, host_synchronous: bool = False):
    """(take(n) -> n samples in seconds, GPU seconds per sample, note, launches per sample)."""
    stream = harness.stream
    if host_synchronous:
        return (lambda n: take_host_synchronous(n, launch, harness, cold=mode == "cold")), per_launch_s, \
            HOST_SYNCHRONOUS_NOTE, 1

    def take(n: int, body: Callable[[], None], divide: int) -> list[float]:
        events = harness.events(2 * n)
        harness.hold()  # nothing below starts until every sample of the batch is queued
        harness.probe_clock()
        for i in range(n):
            if mode == "cold":
                harness.flush()
            events[2 * i].record(stream)
            body()
            events[2 * i + 1].record(stream)
        harness.probe_clock(after=True)
        harness.release()
        harness.nvml.read()  # while the batch runs
        events[2 * n - 1].synchronize()
        return [_elapsed_s(events[2 * i], events[2 * i + 1]) / divide for i in range(n)]

    if mode in ("cold", "hot"):
        return (lambda n: take(n, lambda: launch(stream), 1)), per_launch_s, "", 1
    if mode == "cupti":
        return (lambda n: _take_cupti(n, launch, harness)), per_launch_s, "", 1

    repeats = int(min(1000, max(1, math.ceil(GRAPH_REPLAY_SECONDS / max(per_launch_s, 1e-7)))))
    stream.begin_capture()
    try:
        for _ in range(repeats):
            launch(stream)
    finally:
        graph = stream.end_capture()
    graph.launch(stream)  # the first replay uploads the graph; keep that out of the samples
    stream.synchronize()
    note = f"graph of {repeats} launches per replay; sample = replay time / {repeats}"
    return (lambda n: take(n, lambda: graph.launch(stream), repeats)), per_launch_s * repeats, note, repeats


def take_host_synchronous(n: int, launch: Launch, harness: Any, cold: bool) -> list[float]:
    """n samples of a unit that blocks the host, one at a time, never behind a hold: the untimed
    reset and (cold) the L2 flush, the stream drained, then start event, unit, end event, waited for."""
    stream = harness.stream
    start, end = harness.events(2)
    samples = []
    harness.probe_clock()
    for _ in range(n):
        run_untimed_reset(launch, stream)
        if cold:
            harness.flush()
        stream.synchronize()  # the start event is recorded on an idle stream
        start.record(stream)
        launch(stream)
        end.record(stream)
        end.synchronize()
        samples.append(_elapsed_s(start, end))
    harness.probe_clock(after=True)
    harness.nvml.read()
    return samples


@contextlib.contextmanager
def quiet_torch_profiler() -> Iterator[None]:
    """PyTorch's profiler warns that it "clears events at the end of each cycle" on every first use:
    advice for its schedule API, which gpuprof does not use, printed above every run's table."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*Profiler clears events at the end of each cycle")
        yield


def _take_cupti(n: int, launch: Launch, harness: Harness) -> list[float]:
    """n cold samples timed by CUPTI's kernel records (what ncu and nsys read), not by events."""
    from gpuprof.families._torch import torch

    t = torch()
    with quiet_torch_profiler(), t.profiler.profile(activities=[t.profiler.ProfilerActivity.CUDA]) as prof:
        harness.hold()
        harness.probe_clock()
        for _ in range(n):
            harness.flush()
            launch(harness.stream)
        harness.probe_clock(after=True)
        harness.release()
        harness.nvml.read()  # while the batch runs
        harness.stream.synchronize()
    records = [(e.start_ns(), e.duration_ns(), e.name()) for e in prof.profiler.kineto_results.events()
               if e.device_type() == t.autograd.DeviceType.CUDA]
    return samples_from_records(records)


def samples_from_records(records: list[tuple[int, int, str]]) -> list[float]:
    """Split GPU activity records into samples at each L2 flush; a sample sums what ran between two.

    The harness's own kernels (flush, hold, clock probe) are never counted. Pure, for tests.
    """
    samples: list[float] = []
    current: float | None = None
    for _start, duration_ns, name in sorted(records):
        if name == "gpuprof_flush_l2":
            if current:
                samples.append(current)
            current = 0.0
        elif current is not None and not name.startswith("gpuprof_"):
            current += duration_ns * 1e-9
    if current:
        samples.append(current)
    return samples
