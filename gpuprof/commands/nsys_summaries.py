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
from gpuprof.parsers.nsys_stats import NsysApiSummary, NsysKernelSummary, NsysMemTimeSummary, NsysNvtxSummary


def sqlite_summary(path: Path) -> NsysSummary:
    """Kernel and NVTX range summaries computed from an `nsys export --type sqlite` file. A kernel or
    range that ends before it starts is impossible: it is left out of the tables (and the idle time)
    and a note says how many, so no negative time is shown as a measurement."""
    kernels: dict[str, list[float]] = {}
    impossible = 0
    for k in nsys_sqlite.read_sqlite_kernels(path):
        if k.duration_ns < 0:
            impossible += 1
            continue
        kernels.setdefault(k.demangled_name, []).append(float(k.duration_ns))
    ranges: dict[tuple[str, str], list[float]] = {}
    for e in nsys_sqlite.read_sqlite_nvtx(path):
        duration = e.duration_ns
        if e.kind in ("push_pop", "start_end") and duration is not None and e.name is not None:
            if duration < 0:
                impossible += 1
                continue
            style = "PushPop" if e.kind == "push_pop" else "StartEnd"
            ranges.setdefault((f"{e.domain or ''}:{e.name}", style), []).append(float(duration))
    info = nsys_sqlite.read_sqlite_export_info(path)
    version = info.get("EXPORT_PRODUCT_VERSION")
    note = "memcpy and CUDA API summaries need nsys (nsys stats); this export was read directly"
    notes = [note + (f" (exported by nsys {version})" if version else "")]
    if impossible:
        notes.append(f"{impossible:,} kernel launch(es) or NVTX range(s) end before they start (a negative "
                     "duration, impossible): left out of these tables; the export is damaged or hand-made")
    return NsysSummary(
        path.name,
        kernels=kernel_summaries(kernels),
        memcpy=None,
        api=None,
        nvtx=nvtx_summaries(ranges),
        notes=tuple(notes),
        artifacts=(path,),
        idle=idle_breakdown([op for op in nsys_sqlite.read_sqlite_gpu_ops(path) if op.end_ns >= op.start_ns]),
    )


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
