"""Summary tables in `nsys stats`' shape computed here from raw durations: from an `nsys export
--type sqlite` file read without nsys, and (nsys_torch_fallback) from a PyTorch-profiler trace."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from gpuprof.analysis.idle_time import idle_breakdown
from gpuprof.analysis.stats import duration_stats
from gpuprof.commands.nsys_results import NsysSummary
from gpuprof.parsers import nsys_sqlite
from gpuprof.parsers.gpu_activity import GpuOp
from gpuprof.parsers.nsys_stats import NsysApiSummary, NsysKernelSummary, NsysMemTimeSummary, NsysNvtxSummary


def sqlite_summary(path: Path) -> NsysSummary:
    """Kernel and NVTX range summaries computed from an `nsys export --type sqlite` file. A kernel or
    range whose times no capture can hold (impossible_span) is left out of the tables and the idle
    time, and a note names it and why, so no such time is shown as a measurement."""
    capture = nsys_sqlite.read_sqlite_capture(path)
    kernels: dict[str, list[float]] = {}
    impossible: dict[str, tuple[int, str]] = {}  # name -> (how many, why the first was)

    def flag(name: str, why: str) -> None:
        count, first = impossible.get(name, (0, why))
        impossible[name] = (count + 1, first)

    for k in nsys_sqlite.read_sqlite_kernels(path):
        why = impossible_span(k.start_ns, k.end_ns, capture, kernel=True)
        if why:
            flag(k.demangled_name, why)
            continue
        kernels.setdefault(k.demangled_name, []).append(float(k.end_ns - k.start_ns))
    ranges: dict[tuple[str, str], list[float]] = {}
    for e in nsys_sqlite.read_sqlite_nvtx(path):
        if e.kind in ("push_pop", "start_end") and e.end_ns is not None and e.name is not None:
            why = impossible_span(e.start_ns, e.end_ns, capture, kernel=False)
            if why:
                flag(f"NVTX range {e.name}", why)
                continue
            style = "PushPop" if e.kind == "push_pop" else "StartEnd"
            ranges.setdefault((f"{e.domain or ''}:{e.name}", style), []).append(float(e.end_ns - e.start_ns))
    info = nsys_sqlite.read_sqlite_export_info(path)
    version = info.get("EXPORT_PRODUCT_VERSION")
    note = "memcpy and CUDA API summaries need nsys (nsys stats); this export was read directly"
    notes = [note + (f" (exported by nsys {version})" if version else "")]
    for name, (count, why) in impossible.items():
        notes.append(f"impossible in the export, left out (not a measurement): {name}: {count:,} "
                     f"{'launch' if not name.startswith('NVTX range') else 'range'}(s) {why}")
    ops = possible_gpu_ops(path, capture)
    return NsysSummary(
        path.name,
        kernels=kernel_summaries(kernels),
        memcpy=None,
        api=None,
        nvtx=nvtx_summaries(ranges),
        notes=tuple(notes),
        artifacts=(path,),
        idle=idle_breakdown(ops),
    )


def possible_gpu_ops(path: Path, capture: tuple[int, int] | None) -> list[GpuOp]:
    """The export's kernels, copies and memsets, less those whose times are impossible (impossible_span)."""
    return [op for op in nsys_sqlite.read_sqlite_gpu_ops(path)
            if not impossible_span(op.start_ns, op.end_ns, capture, kernel=op.kind == "kernel")]


def impossible_span(start_ns: float, end_ns: float, capture: tuple[int, int] | None, kernel: bool) -> str | None:
    """Why no capture can hold a kernel, copy or range with these times, or None: it ends before it
    starts, a kernel takes no time, a timestamp is negative or lies outside the capture's start and stop."""
    if end_ns < start_ns:
        return f"end before they start ({(end_ns - start_ns) / 1e3:,.3f} µs)"
    if kernel and end_ns == start_ns:
        return "take no time (0 ns)"
    if start_ns < 0:
        return "start at a negative time"
    if capture is not None and (start_ns < capture[0] or end_ns > capture[1]):
        return f"lie outside the capture ({capture[0]:,}–{capture[1]:,} ns)"
    return None


def _by_total(groups: dict[Any, list[float]]) -> tuple[list[tuple[Any, list[float]]], float]:
    items = sorted(groups.items(), key=lambda kv: -math.fsum(kv[1]))
    return items, math.fsum(math.fsum(d) for _, d in items)


def kernel_summaries(groups: dict[str, list[float]]) -> tuple[NsysKernelSummary, ...]:
    items, total = _by_total(groups)
    out = []
    for name, d in items:
        s = duration_stats(d, total)
        out.append(NsysKernelSummary(name=name, time_pct=s["time_pct"], total_ns=s["total_ns"], instances=len(d),
                                     avg_ns=s["avg_ns"], med_ns=s["med_ns"], min_ns=s["min_ns"], max_ns=s["max_ns"],
                                     stddev_ns=s["stddev_ns"]))
    return tuple(out)


def memcpy_summaries(groups: dict[str, list[float]]) -> tuple[NsysMemTimeSummary, ...]:
    items, total = _by_total(groups)
    return tuple(NsysMemTimeSummary(operation=k, count=len(d), **duration_stats(d, total)) for k, d in items)


def api_summaries(groups: dict[str, list[float]]) -> tuple[NsysApiSummary, ...]:
    items, total = _by_total(groups)
    return tuple(NsysApiSummary(name=k, num_calls=len(d), **duration_stats(d, total)) for k, d in items)


_Ranges = dict[tuple[str, str], list[float]] | dict[tuple[str, str | None], list[float]]  # style None: not known


def nvtx_summaries(groups: _Ranges) -> tuple[NsysNvtxSummary, ...]:
    items, total = _by_total(groups)
    out = []
    for (rng, style), d in items:
        domain, _, name = rng.partition(":")
        out.append(NsysNvtxSummary(range=rng, domain=domain or None, name=name, style=style,
                                   instances=len(d), **duration_stats(d, total)))
    return tuple(out)
