"""NsysProfile -> Rich: kernel, memcpy, CUDA API and NVTX range summaries, one time unit per column."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gpuprof.commands.nsys import NsysProfile, NsysSummary
from gpuprof.parsers.nsys_stats import NsysApiSummary, NsysKernelSummary, NsysMemTimeSummary, NsysNvtxSummary

_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
_STATS = ("total_ns", "avg_ns", "med_ns", "min_ns", "max_ns")
_HEADERS = ("Total", "Avg", "Med", "Min", "Max")
PERFETTO = "https://ui.perfetto.dev"


def time_unit(values: Iterable[float | None]) -> tuple[str, float]:
    """One unit for a whole column: the largest in which its smallest non-zero value, printed with
    3 decimals, still keeps 3 significant digits (0.135 µs, not 0.000 ms)."""
    positive = [v for v in values if v is not None and v > 0]
    low = min(positive, default=0.0)
    for name, scale in _UNITS:
        if low >= scale / 10:
            return name, scale
    return "ns", 1.0


def _cell(value: float | None, scale: float) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if scale == 1.0 else f"{value / scale:,.3f}"


def _table(title: str, name_header: str, count_header: str, rows: Sequence, names: list[str], counts: list[int]) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold")
    table.add_column(name_header, overflow="fold", max_width=72)
    table.add_column(count_header, justify="right")
    table.add_column("Time %", justify="right")
    columns = []
    for attr, header in zip(_STATS, _HEADERS):
        values = [getattr(r, attr) for r in rows]
        unit, scale = time_unit(values)
        table.add_column(f"{header} ({unit})", justify="right")
        columns.append([_cell(v, scale) for v in values])
    for i, r in enumerate(rows):
        # Text, not str: "[CUDA memset]" and template arguments must not be read as Rich markup.
        table.add_row(Text(names[i]), f"{counts[i]:,}", f"{r.time_pct:.1f}", *(col[i] for col in columns))
    return table


def kernel_table(rows: Sequence[NsysKernelSummary], title: str = "CUDA kernels (GPU time)") -> Table:
    return _table(title, "Kernel", "Instances", rows, [r.name for r in rows], [r.instances for r in rows])


def memcpy_table(rows: Sequence[NsysMemTimeSummary], title: str = "Memory copies and sets (GPU time)") -> Table:
    return _table(title, "Operation", "Count", rows, [r.operation for r in rows], [r.count for r in rows])


def api_table(rows: Sequence[NsysApiSummary], title: str = "CUDA API calls (CPU time)") -> Table:
    return _table(title, "Function", "Calls", rows, [r.name for r in rows], [r.num_calls for r in rows])


def nvtx_table(rows: Sequence[NsysNvtxSummary], title: str = "NVTX ranges (CPU time)") -> Table:
    names = [f"{r.name} [{r.domain}]" if r.domain else r.name for r in rows]
    return _table(title, "Range", "Instances", rows, names, [r.instances for r in rows])


def render_summary(summary: NsysSummary, heading: str, source: str) -> list[RenderableType]:
    out: list[RenderableType] = [Text(heading, style="bold underline")]
    if summary.error:
        out.append(Text(f"FAILED: {summary.error}", style="bold red"))
    ranges_title = ("Ranges: torch.profiler record_function (CPU time)" if source == "torch"
                    else "NVTX ranges (CPU time)")
    parts = (
        (summary.kernels, kernel_table, "CUDA kernels (GPU time)", "no CUDA kernels were recorded"),
        (summary.memcpy, memcpy_table, "Memory copies and sets (GPU time)", "no memory copies or sets"),
        (summary.api, api_table, "CUDA API calls (CPU time)", "no CUDA API calls were recorded"),
        (summary.nvtx, nvtx_table, ranges_title, "no ranges were recorded"),
    )
    for rows, make, title, empty in parts:
        if rows is None:  # this source cannot give it; the notes say why
            continue
        if rows:
            out.append(make(rows, title))
        elif not summary.error:
            out.append(Text(f"{title}: {empty}", style="dim"))
    out += [Text(f"note: {n}", style="dim") for n in summary.notes]
    traces = [p for p in summary.artifacts if p.name.endswith(".trace.json")]
    out += [Text(f"Chrome trace (open it in {PERFETTO}): {p}") for p in traces]
    kept = [p for p in summary.artifacts if p not in traces]
    if kept:
        out.append(Text("kept: " + ", ".join(str(p) for p in kept), style="dim"))
    return out


def render_profile(profile: NsysProfile) -> Group:
    """Every summary of the run, one block per variant (or command, or imported report)."""
    out: list[RenderableType] = []
    size = " ".join(f"{k}={v}" for k, v in (profile.size or {}).items())
    for s in profile.summaries:
        heading = f"{profile.family}/{s.label}  ({size})" if profile.family else s.label
        out += render_summary(s, heading, profile.source)
        out.append(Text(""))
    out.append(Text(f"source: {profile.tool}; files in {profile.out_dir}", style="dim"))
    if profile.source == "nsys":
        out.append(Text("nsys reports store the profiled process's environment variables; check before sharing",
                        style="dim"))
    return Group(*out)
