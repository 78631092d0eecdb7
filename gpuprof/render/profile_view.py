"""`gpuprof profile`'s report: where the GPU time goes (the timeline), then why, for each top kernel."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from gpuprof.analysis import roofline
from gpuprof.analysis.kernel_summary import summarize_kernels
from gpuprof.commands.profile import ProfileReport
from gpuprof.render import ncu_view, nsys_view
from gpuprof.render.kernel_names import short_names

TIMELINE_ROWS = 10


def render_report(report: ProfileReport, width: int | None, wide: bool = False) -> Group:
    out: list[RenderableType] = [Text("1. Where the GPU time goes", style="bold underline")]
    (summary,) = report.timeline.summaries
    kernels = summary.kernels or ()
    out.append(nsys_view.kernel_table(kernels[:TIMELINE_ROWS], f"CUDA kernels by GPU time ({report.timeline.tool})",
                                      None if wide else width, wide))
    if len(kernels) > TIMELINE_ROWS:
        rest = kernels[TIMELINE_ROWS:]
        out.append(Text(f"... and {len(rest)} more kernels, {sum(k.time_pct for k in rest):.1f} % of the time"))
    if summary.nvtx:  # the program's own ranges: where its phases spend their time, for --nvtx
        out.append(nsys_view.nvtx_table(summary.nvtx[:TIMELINE_ROWS], width=None if wide else width, wide=wide))
    out += nsys_view.range_kernel_tables(summary, None if wide else width, wide)  # per range, where the source can tell
    if summary.error:
        out.append(Text(f"note: {summary.error}", style="yellow"))
    out.append(Text(f"timeline source: {report.timeline.source_line}"))
    if summary.idle is not None:
        out += nsys_view.idle_lines(summary.idle)
    out.append(Text(chosen_line(report, short_names([k.name for k in kernels]))))
    out.append(Text(""))
    out.append(Text("2. Why: Nsight Compute on those kernels", style="bold underline"))
    if report.ncu is None:
        problem = report.ncu_problem.message if report.ncu_problem else "not run"
        out.append(Text(f"ncu could not profile them: {problem}", style="red"))
        return Group(*out)
    run = report.ncu
    out.append(ncu_view.summary_table(run, width, wide))
    out.append(ncu_view.summary_advice(run, full=wide))
    rows = ncu_view.rows_of(run)
    summaries = summarize_kernels(rows)
    points = ncu_view.kernel_points(summaries, short_names([s.name for s in summaries]))
    roof = roofline.roof_from_rows(rows)
    if roof and points:
        out.append(ncu_view.roofline_table(points, roof, None if wide else width, rows))
    return Group(*out)


def chosen_line(report: ProfileReport, names: dict[str, str]) -> str:
    """Which kernels went to ncu and why: yours (kernel_origin) and the largest library ones, or an NVTX range's."""
    narrowed = f" matching --kernel {report.kernel_filter!r}" if report.kernel_filter else ""
    if report.nvtx:
        ranges = " or ".join(repr(e) for e in report.nvtx)
        return f"profiled under ncu: the kernels{narrowed} inside NVTX range {ranges}"
    yours = [names.get(k.name, k.name) for k in report.top if k.name in report.user_kernels]
    library = [names.get(k.name, k.name) for k in report.top if k.name not in report.user_kernels]
    parts = ([f"yours: {', '.join(yours)}"] if yours else []) + ([f"library: {', '.join(library)}"] if library else [])
    return (f"profiled under ncu{narrowed}: {'; '.join(parts)} ({report.covered_pct:.0f} % of the kernel time; "
            "your own kernels are chosen first)")


def files_line(report: ProfileReport) -> str:
    kept = [str(p) for s in report.timeline.summaries for p in s.artifacts]
    if report.ncu:
        kept += list(dict.fromkeys(str(r.report) for r in report.ncu.results if r.report))
    return "files: " + ", ".join(kept)
