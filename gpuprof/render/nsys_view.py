"""NsysProfile -> Rich: kernel, memcpy, CUDA API and NVTX range summaries, one time unit per column."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gpuprof.analysis.idle_time import LAUNCH_GAP_NS, IdleBreakdown
from gpuprof.commands.nsys_results import NsysProfile, NsysSummary
from gpuprof.parsers.cupti_activity import OUTSIDE
from gpuprof.parsers.nsys_stats import NsysApiSummary, NsysKernelSummary, NsysMemTimeSummary, NsysNvtxSummary
from gpuprof.render.fit import Column, fitted_table
from gpuprof.render.kernel_names import short_names

_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
_STATS = ("total_ns", "avg_ns", "med_ns", "min_ns", "max_ns")
_HEADERS = ("Total", "Avg", "Med", "Min", "Max")
PERFETTO = "https://ui.perfetto.dev"

_Record = TypeVar("_Record")


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


_PRIORITY = (0, 1, 3, 4, 4)  # Total always; Avg, then Med, then Min and Max give way on narrow terminals


MAX_ROWS = 200  # a table's rows, largest total first; a trace of 300,000 distinct kernels would take minutes to draw


def _table(title: str, name_header: str, count_header: str, rows: Sequence, names: list[str], counts: list[int],
           width: int | None) -> Table:
    caption = ""
    if len(rows) > MAX_ROWS:
        caption = f"the {MAX_ROWS} largest of {len(rows):,} rows (all of them: --json)"
        rows, names, counts = rows[:MAX_ROWS], names[:MAX_ROWS], counts[:MAX_ROWS]
    columns = [Column(name_header, 0, "left"), Column(count_header, 2), Column("Time %", 0)]
    cells = []
    for attr, header, priority in zip(_STATS, _HEADERS, _PRIORITY):
        values = [getattr(r, attr) for r in rows]
        unit, scale = time_unit(values)
        columns.append(Column(f"{header} ({unit})", priority))
        cells.append([_cell(v, scale) for v in values])
    # Text, not str: "[CUDA memset]" and template arguments must not be read as Rich markup.
    body: list[list[str | Text]] = [[Text(names[i]), f"{counts[i]:,}", f"{r.time_pct:.1f}", *(col[i] for col in cells)]
                                    for i, r in enumerate(rows)]
    return fitted_table(columns, body, width, title=title, caption=caption)


def kernel_table(rows: Sequence[NsysKernelSummary], title: str = "CUDA kernels (GPU time)", width: int | None = None,
                 wide: bool = False) -> Table:
    """One row per distinct kernel, largest total first; names as stems by rule (full with --wide, --json)."""
    names = short_names([r.name for r in rows])
    shown = [r.name if wide else names[r.name] for r in rows]
    return _table(title, "Kernel", "Instances", rows, shown, [r.instances for r in rows], width)


def memcpy_table(rows: Sequence[NsysMemTimeSummary], title: str = "Memory copies and sets (GPU time)",
                 width: int | None = None, wide: bool = False) -> Table:
    return _table(title, "Operation", "Count", rows, [r.operation for r in rows], [r.count for r in rows], width)


def api_table(rows: Sequence[NsysApiSummary], title: str = "CUDA API calls (CPU time)", width: int | None = None,
              wide: bool = False) -> Table:
    return _table(title, "Function", "Calls", rows, [r.name for r in rows], [r.num_calls for r in rows], width)


def nvtx_table(rows: Sequence[NsysNvtxSummary], title: str = "NVTX ranges (CPU time)", width: int | None = None,
               wide: bool = False) -> Table:
    names = [f"{r.name} [{r.domain}]" if r.domain else r.name for r in rows]
    return _table(title, "Range", "Instances", rows, names, [r.instances for r in rows], width)


def render_summary(summary: NsysSummary, heading: str, source: str, width: int | None = None,
                   wide: bool = False) -> list[RenderableType]:
    out: list[RenderableType] = [Text(heading, style="bold underline")]
    if summary.error:
        out.append(Text(f"FAILED: {summary.error}", style="bold red"))
    ranges_title = ("Ranges: torch.profiler record_function (CPU time)" if source == "torch"
                    else "NVTX ranges (CPU time)")
    table_width = None if wide else width
    out += _section(summary, summary.kernels, kernel_table, "CUDA kernels (GPU time)",
                    "no CUDA kernels were recorded", table_width, wide)
    out += _section(summary, summary.memcpy, memcpy_table, "Memory copies and sets (GPU time)",
                    "no memory copies or sets", table_width, wide)
    out += _section(summary, summary.api, api_table, "CUDA API calls (CPU time)",
                    "no CUDA API calls were recorded", table_width, wide)
    out += _section(summary, summary.nvtx, nvtx_table, ranges_title, "no ranges were recorded", table_width, wide)
    out += range_kernel_tables(summary, table_width, wide)
    if summary.idle is not None:
        out += idle_lines(summary.idle)
    out += [Text(f"note: {n}", style="dim") for n in summary.notes]
    traces = [p for p in summary.artifacts if p.name.endswith(".trace.json")]
    out += [Text(f"Chrome trace (open it in {PERFETTO}): {p}") for p in traces]
    kept = [p for p in summary.artifacts if p not in traces]
    if kept:
        out.append(Text("kept: " + ", ".join(str(p) for p in kept), style="dim"))
    return out


MAX_RANGE_TABLES = 12  # per-range kernel tables shown, largest first; --json keeps them all


def range_kernel_tables(summary: NsysSummary, width: int | None, wide: bool) -> list[RenderableType]:
    """The kernels of each NVTX range (by its path in the ranges around it), largest GPU time first."""
    groups = summary.kernels_by_range or ()
    out: list[RenderableType] = [kernel_table(g.kernels, _range_title(g.range), width, wide)
                                 for g in groups[:MAX_RANGE_TABLES]]
    if len(groups) > MAX_RANGE_TABLES:
        out.append(Text(f"{len(groups) - MAX_RANGE_TABLES} more range(s) with kernels: see --json", style="dim"))
    return out


def _range_title(path: str) -> str:
    return ("CUDA kernels outside every NVTX range (GPU time)" if path == OUTSIDE
            else f"CUDA kernels in NVTX range {path} (GPU time)")


def _section(summary: NsysSummary, rows: Sequence[_Record] | None,
             make: Callable[[Sequence[_Record], str, int | None, bool], Table], title: str, empty: str,
             width: int | None, wide: bool) -> list[RenderableType]:
    """One summary's table; nothing where the source cannot give it (the notes say why), a dim line
    where it had nothing of that kind (unless the program failed)."""
    if rows is None:
        return []
    if rows:
        return [make(rows, title, width, wide)]
    return [] if summary.error else [Text(f"{title}: {empty}", style="dim")]


def render_profile(profile: NsysProfile, width: int | None = None, wide: bool = False) -> Group:
    """Every summary of the run, one block per variant (or command, or imported report), fitted to `width`."""
    out: list[RenderableType] = []
    size = " ".join(f"{k}={v}" for k, v in (profile.size or {}).items())
    for s in profile.summaries:
        heading = f"{profile.family}/{s.label}  ({size})" if profile.family else s.label
        out += render_summary(s, heading, profile.source, width, wide)
        out.append(Text(""))
    out.append(Text(f"source: {profile.source_line}; files in {profile.out_dir}", style="dim"))
    if profile.source == "nsys":
        out.append(Text("nsys reports store the profiled process's environment variables; check before sharing",
                        style="dim"))
    return Group(*out)


def _duration(ns: float) -> str:
    unit, scale = time_unit([ns])
    return f"{ns / scale:,.3g} {unit}" if scale != 1.0 else f"{ns:,.0f} ns"


def idle_lines(idle: IdleBreakdown) -> list[RenderableType]:
    """Where the GPU sat idle between its first and last operation, and how much copy time ran beside
    kernels: a few short lines (analysis/idle_time.py says how a gap is put in its bin)."""
    out: list[RenderableType] = [Text(
        f"GPU idle {idle.pct(idle.idle_ns):.1f} % of the {_duration(idle.span_ns)} from its first operation to its "
        f"last (busy {_duration(idle.busy_ns)})", style="bold")]
    bins = [("host-bound", idle.host_bound_ns, idle.host_bound_gaps,
             "queued only after the GPU went idle: it waited for the CPU"),
            ("launch gaps", idle.launch_gap_ns, idle.launch_gaps,
             f"already queued, at most {_duration(LAUNCH_GAP_NS)} apart: launch latency"),
            ("other", idle.other_ns, idle.other_gaps, "already queued, longer: events, other streams, syncs"
             if idle.host_calls_known else "longer (this source links no operation to its host call)")]
    for name, ns, gaps, why in bins:
        if gaps:
            count = f"{gaps:,} gap{'s' if gaps != 1 else ''}"
            out.append(Text(f"  {name:<12}{idle.pct(ns):5.1f} %  {count:<11} {why}"))
    if idle.idle_ns > 0:
        out.append(Text(f"  longest gap {_duration(idle.longest_gap_ns)}", style="dim"))
    if idle.copy_ns > 0:
        share = 100.0 * idle.overlap_ns / idle.copy_ns
        out.append(Text(f"copy/compute overlap: {share:.0f} % of {_duration(idle.copy_ns)} of copies ran while a "
                        f"kernel ran"))
    return out
