"""Where the GPU sat idle on a timeline, in the spirit of Holistic Trace Analysis' idle-time breakdown:
between the first GPU operation and the last, every stretch with nothing running is one gap, put
in one of three bins by what the host was doing:

- host-bound: the operation that ended the gap was queued by the host only after the gap began;
  the GPU waited for the CPU (Python overhead, data loading, a synchronize before the next step);
- launch gap: it was already queued and the gap is short (at most LAUNCH_GAP_NS): the cost of
  getting from one operation to the next (launch latency, a tiny dependency);
- other: it was queued and the gap is longer: waiting on something else (an event, another
  stream, a host-synchronous copy) — or, where the tool recorded no host calls, any longer gap.

Also the copy/compute overlap: how much of the copy time ran while a kernel ran."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from gpuprof.parsers.gpu_activity import GpuOp

LAUNCH_GAP_NS = 50_000.0  # 50 µs: longer than any launch latency on a recent GPU (a few µs)


@dataclass(frozen=True)
class IdleBreakdown:
    span_ns: float  # first GPU operation's start to last one's end
    busy_ns: float  # something running (union of every operation)
    launch_gap_ns: float
    launch_gaps: int
    host_bound_ns: float
    host_bound_gaps: int
    other_ns: float
    other_gaps: int
    longest_gap_ns: float
    kernel_ns: float  # union of kernels
    copy_ns: float  # union of memory copies (memsets count as busy, not as copies)
    overlap_ns: float  # copy time during which a kernel ran
    host_calls_known: bool  # the tool linked operations to the host calls that queued them

    @property
    def idle_ns(self) -> float:
        return self.span_ns - self.busy_ns

    def pct(self, ns: float) -> float:
        return 100.0 * ns / self.span_ns if self.span_ns > 0 else 0.0


def _union(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _length(intervals: Sequence[tuple[float, float]]) -> float:
    return sum(end - start for start, end in intervals)


def _intersection(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> float:
    """Total length where two sorted, disjoint interval lists overlap."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, high - low)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def idle_breakdown(ops: Sequence[GpuOp], launch_gap_ns: float = LAUNCH_GAP_NS) -> IdleBreakdown | None:
    """The breakdown of a timeline's GPU operations; None where there are none."""
    ops = [op for op in ops if op.end_ns >= op.start_ns]
    if not ops:
        return None
    busy = _union((op.start_ns, op.end_ns) for op in ops)
    starts = sorted(ops, key=lambda op: op.start_ns)
    bins = {"launch": [0.0, 0], "host": [0.0, 0], "other": [0.0, 0]}
    longest = 0.0
    k = 0
    for (_, gap_start), (gap_end, _) in pairwise(busy):
        while starts[k].start_ns < gap_end:
            k += 1
        # The operations that end the gap (those starting at its end, next in start order): the GPU
        # waited for the last of them to be queued. Read in place: a scan of the rest per gap was
        # quadratic, minutes for an export of 300,000 kernels.
        last = k
        while last < len(starts) and starts[last].start_ns == gap_end:
            last += 1
        ending = starts[k:last]
        queued = [op.queued_ns for op in ending if op.queued_ns is not None]
        gap = gap_end - gap_start
        longest = max(longest, gap)
        if queued and min(queued) > gap_start:
            which = "host"
        elif gap <= launch_gap_ns:
            which = "launch"
        else:
            which = "other"
        bins[which][0] += gap
        bins[which][1] += 1
    kernels = _union((op.start_ns, op.end_ns) for op in ops if op.kind == "kernel")
    copies = _union((op.start_ns, op.end_ns) for op in ops if op.kind == "memcpy")
    return IdleBreakdown(
        span_ns=busy[-1][1] - busy[0][0], busy_ns=_length(busy),
        launch_gap_ns=bins["launch"][0], launch_gaps=int(bins["launch"][1]),
        host_bound_ns=bins["host"][0], host_bound_gaps=int(bins["host"][1]),
        other_ns=bins["other"][0], other_gaps=int(bins["other"][1]), longest_gap_ns=longest,
        kernel_ns=_length(kernels), copy_ns=_length(copies), overlap_ns=_intersection(copies, kernels),
        host_calls_known=any(op.queued_ns is not None for op in ops),
    )
