"""`gpuprof ncu`: each variant under Nsight Compute, parsed into tables, advice and a roofline."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from gpuprof.cli._app import CommandAfterDashes, app, command_after_dashes
from gpuprof.cli._boundary import exit_on_error, warn
from gpuprof.cli._options import Force, JsonOut, Size, Variants, json_target, with_variant_options
from gpuprof.cli._output import human_console, write_json
from gpuprof.errors import Finding, UsageError
from gpuprof.variants.selection import VariantOptions

if TYPE_CHECKING:
    from gpuprof.analysis.ladder import Rung
    from gpuprof.commands.ncu import NcuRun

# = commands.ncu.DEFAULT_OUT and LAUNCHES_PER_KERNEL (a test keeps them equal; the core says why 1); not
# imported, for a fast --help
DEFAULT_OUT = Path("gpuprof-ncu")
PLOT_SUFFIXES = (".png", ".svg", ".pdf")  # matplotlib picks the format from the name
LAUNCHES_PER_KERNEL = 1


@app.command(cls=CommandAfterDashes)
@with_variant_options
def ncu(
    ctx: typer.Context,
    family: Annotated[str | None, typer.Argument(help="Kernel family; or '--' and a command to profile.")] = None,
    variants: Variants = None,
    size: Size = None,
    clock_control: Annotated[str, typer.Option(
        "--clock-control",
        help="'none' (default: clocks as found, so durations match `run`) or 'base' (ncu locks base "
             "clocks).")] = "none",
    section: Annotated[list[str] | None, typer.Option(
        "--section", help="ncu section to collect (repeatable); replaces the default set.")] = None,
    set_name: Annotated[str | None, typer.Option(
        "--set", help="What to collect: 'basic' (the default sections), 'why' (= --source: + stall reasons and "
                      "source lines), 'full' (ncu's full set + source); the replay passes each costs are printed "
                      "first. Any other name is passed to ncu as its own --set.")] = None,
    metrics: Annotated[str | None, typer.Option("--metrics", help="Extra comma-separated ncu metrics.")] = None,
    kernel: Annotated[str | None, typer.Option(
        "--kernel", help="With '-- COMMAND': profile kernels whose name matches this regex.")] = None,
    nvtx_include: Annotated[list[str] | None, typer.Option(
        "--nvtx-include", help="With '-- COMMAND': ncu NVTX filter, e.g. 'matmul/naive/' (repeatable).")] = None,
    import_path: Annotated[Path | None, typer.Option(
        "--import", dir_okay=False, help="Show an existing .ncu-rep instead of profiling (no GPU needed).")] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for the .ncu-rep reports and ncu logs.")] = DEFAULT_OUT,
    plot: Annotated[Path | None, typer.Option(
        "--plot", dir_okay=False, help="Also save the roofline as PNG or SVG here.")] = None,
    ncu_path: Annotated[str | None, typer.Option("--ncu", help="Path to ncu if it is not on PATH.")] = None,
    per_launch: Annotated[bool, typer.Option(
        "--per-launch",
        help="With '-- COMMAND' or --import: one row per launch instead of one per distinct kernel.")] = False,
    launch_skip: Annotated[int, typer.Option(
        "--launch-skip",
        help="With '-- COMMAND': skip this many launches first (warm-up); per kernel unless --launch-count is "
             "given.")] = 0,
    launch_count: Annotated[int | None, typer.Option(
        "--launch-count", help="With '-- COMMAND': profile at most this many matching launches in all.")] = None,
    per_kernel: Annotated[int, typer.Option(
        "--launches-per-kernel",
        help="With '-- COMMAND': profile the first N launches of each kernel launch configuration (0: every "
             "launch).")] = LAUNCHES_PER_KERNEL,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Full kernel names, every column and the full advice text.")] = False,
    source: Annotated[bool, typer.Option(
        "--source", help="Also show where each kernel's warps wait: stall reasons and the hottest source lines "
                         "(collects SourceCounters, WarpStateStats and the source; build with -lineinfo).")] = False,
    source_lines: Annotated[int, typer.Option("--source-lines", help="With --source: how many lines.")] = 10,
    sass: Annotated[str | None, typer.Option(
        "--sass", help="The SASS instructions of this FILE:LINE (implies --source).")] = None,
    ladder: Annotated[bool, typer.Option(
        "--ladder", help="With a family: its variants as a ladder (hand-written ones in manifest order, the vendor "
                         "ones last), each rung against the one before, and each variant's expected_limiter "
                         "checked against what ncu measured (docs/ladder.md).")] = False,
    json_out: JsonOut = None,
    force: Force = False,
    *,
    variant_options: VariantOptions,
) -> None:
    """Profile each variant under Nsight Compute (only its own launches, by NVTX range) and explain it.

    Exit 1 if ncu could not profile a variant (the reasons are printed).

    Examples:

      gpuprof ncu matmul --variants naive,smem_tiled,cublas --plot roofline.png

      gpuprof ncu matmul -v warptile,cublas --set why  (+ stall reasons and the hottest source lines)

      gpuprof ncu -- python my_script.py            (every kernel of any program)

      gpuprof ncu --kernel 'gemm' -- python train.py

      gpuprof ncu --launch-skip 2 -- python mlp.py   (skip 2 warm-ups of each kernel, profile the next)

      gpuprof ncu --import gpuprof-ncu/matmul_naive.ncu-rep --json ncu.json
    """
    with exit_on_error():
        from gpuprof import files
        from gpuprof.commands import ncu as core
        from gpuprof.commands.target import Target
        from gpuprof.files import check_outputs

        target = json_target(json_out)
        if source_lines < 1 or (sass is not None and not re.fullmatch(r".+:\d+", sass)):
            raise UsageError("--source-lines takes 1 or more; --sass takes FILE:LINE, e.g. matmul.cu:42")
        if metrics is not None and not any(m.strip() for m in metrics.split(",")):
            raise UsageError(f"--metrics {metrics!r} names no metric; give names like dram__bytes.sum,sm__throughput")
        source = source or sass is not None  # a line's SASS is part of the source view
        check_outputs([import_path, *(variant_options.add or [])], {"--json": target, "--plot": plot}, force)
        if plot is not None and not plot.parent.is_dir():
            raise UsageError(f"--plot {plot}: directory {plot.parent} does not exist")
        if plot is not None and plot.suffix.lower() not in PLOT_SUFFIXES and not files.is_stream(plot):
            raise UsageError(f"--plot {plot}: give a {', '.join(PLOT_SUFFIXES)} file name (the format follows it)")
        request = core.NcuRequest(
            Target(families=(family,) if family is not None else (), variants=variants, size=size,
                   options=variant_options, command=command_after_dashes(ctx), import_path=import_path,
                   unexpected=tuple(ctx.args)),
            out_dir=out, clock_control=clock_control, sections=tuple(section or ()), set_name=set_name,
            extra_metrics=tuple(m.strip() for m in (metrics or "").split(",") if m.strip()),
            nvtx_include=tuple(nvtx_include or ()), kernel_regex=kernel, launch_skip=launch_skip,
            launch_count=launch_count, launches_per_kernel=per_kernel, ncu=ncu_path, source=source,
            ladder=ladder)
        console = human_console(target)
        from gpuprof.commands.ncu_source import collection_note

        if (note := collection_note(request)) is not None:
            console.print(f"[dim]{escape(note)}[/]")
        source = request.shows_source
        run = core.execute(request, lambda step: console.print(f"[dim]ncu: profiling {escape(step.variant)}[/]"))
        rungs = core.ladder(run, request) if ladder else None
        write_json({"schema": "gpuprof.ncu", "schema_version": core.JSON_VERSION, "run": run,
                    **({"ladder": rungs} if rungs is not None else {})}, target)
        _show(run, plot, target, per_launch=per_launch or run.family is not None, wide=wide,
              source=(source_lines, sass) if source else None, rungs=rungs)


def _show(run: NcuRun, plot: Path | None, target, per_launch: bool, wide: bool = False,
          source: tuple[int, str | None] | None = None, rungs: list[Rung] | None = None) -> None:
    from gpuprof.analysis import roofline
    from gpuprof.analysis.kernel_summary import summarize_kernels
    from gpuprof.render.fit import print_table
    from gpuprof.render.kernel_names import short_names
    from gpuprof.render.ncu_view import (
        impossible_lines,
        kernel_points,
        launches_table,
        roofline_table,
        rows_of,
        summary_advice,
        summary_table,
        variant_advice,
    )
    from gpuprof.render.safe_text import visible

    console = human_console(target)
    width = console.width
    rows = rows_of(run)
    if per_launch:
        print_table(console, launches_table(run, width, wide), wide)
        console.print(variant_advice(run, full=wide))
        points = [p for result in run.results if (p := roofline.point(result.label, result.rows))]
    else:
        print_table(console, summary_table(run, width, wide), wide)
        console.print(summary_advice(run, full=wide))
        summaries = summarize_kernels(rows)
        points = kernel_points(summaries, short_names([s.name for s in summaries]))
    roof = roofline.roof_from_rows(rows)
    if roof and points:
        print_table(console, roofline_table(points, roof, None if wide else width, rows), wide)
        if plot is not None:
            from gpuprof.render.roofline_plot import save_roofline

            save_roofline(points, roof, plot, f"{run.family or 'ncu'} roofline")
            console.print(f"roofline plot written to {plot}")
    elif plot is not None:
        warn(f"--plot {plot}: nothing written; the report has no roofline data (the default sections collect it)")
    if source is not None:
        from gpuprof.render.source_view import print_source_view

        print_source_view(console, run, lines=source[0], sass=source[1], wide=wide)
    if rungs is not None:
        from gpuprof.render.ladder_view import print_ladder

        print_ladder(console, rungs, wide, title=f"{run.family} ladder")
    for line in impossible_lines(run):
        console.print(visible(f"impossible in the report, left out (not a measurement): {line}"), markup=False)
    passes = sorted({row.replay_passes for row in rows if row.replay_passes is not None})
    if passes:
        times = str(passes[0]) if len(passes) == 1 else f"{passes[0]}–{passes[-1]}"
        console.print(f"[dim]ncu replayed each profiled launch {times} times to collect its metrics[/]")
    reports = list(dict.fromkeys(str(r.report) for r in run.results if r.report))
    if reports:
        console.print(f"reports: {', '.join(reports)}", soft_wrap=True)
    for r in run.results:
        if r.note:
            console.print(f"[dim]{escape(r.label)}: {escape(r.note)}[/]")
    failed = [r for r in run.results if r.error]
    for r in failed:
        console.print(f"[red]{escape(r.label)}:[/] {escape(r.error or '')}")
    if failed:
        raise Finding(f"ncu could not profile {len(failed)} of {len(run.results)}: "
                      + ", ".join(r.label for r in failed[:6]) + (" …" if len(failed) > 6 else ""))
