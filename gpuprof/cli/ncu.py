"""`gpuprof ncu`: each variant under Nsight Compute, parsed into tables, advice and a roofline."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from gpuprof.cli._app import CommandAfterDashes, app, command_after_dashes
from gpuprof.cli._boundary import exit_on_error, warn
from gpuprof.cli._options import (
    Force,
    JsonOut,
    Size,
    VariantOptions,
    Variants,
    json_target,
    require_family,
    with_variant_options,
)
from gpuprof.cli._output import human_console, write_json
from gpuprof.errors import Finding, UsageError

if TYPE_CHECKING:
    from gpuprof.commands.ncu import NcuRun

# A whole program: the first launch of each kernel launch configuration (TOOLS.md 1.2). Every
# profiled launch is replayed once per metric pass, so this is what a program's profile costs;
# one launch is enough because ncu flushes the caches before each pass (--cache-control all), so
# a first launch is not measured colder than a later one. No warm-up is skipped by default: a
# kernel launched once would then not be profiled at all (--launch-skip 1 asks for it).
DEFAULT_PER_KERNEL = 1


@app.command(cls=CommandAfterDashes)
@with_variant_options
def ncu(
    ctx: typer.Context,
    family: Annotated[Optional[str], typer.Argument(help="Kernel family; or '--' and a command to profile.")] = None,
    variants: Variants = None,
    size: Size = None,
    clock_control: Annotated[str, typer.Option("--clock-control", help="'none' (default: clocks as found, so durations match `run`) or 'base' (ncu locks base clocks).")] = "none",
    section: Annotated[Optional[list[str]], typer.Option("--section", help="ncu section to collect (repeatable); replaces the default set.")] = None,
    set_name: Annotated[Optional[str], typer.Option("--set", help="ncu section set, e.g. full.")] = None,
    metrics: Annotated[Optional[str], typer.Option("--metrics", help="Extra comma-separated ncu metrics.")] = None,
    kernel: Annotated[Optional[str], typer.Option("--kernel", help="With '-- COMMAND': profile kernels whose name matches this regex.")] = None,
    nvtx_include: Annotated[Optional[list[str]], typer.Option("--nvtx-include", help="With '-- COMMAND': ncu NVTX filter, e.g. 'matmul/naive/' (repeatable).")] = None,
    import_path: Annotated[Optional[Path], typer.Option("--import", help="Show an existing .ncu-rep instead of profiling (no GPU needed).", dir_okay=False)] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for the .ncu-rep reports and ncu logs.")] = Path("gpuprof-ncu"),
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Also save the roofline as PNG or SVG here.", dir_okay=False)] = None,
    ncu_path: Annotated[Optional[str], typer.Option("--ncu", help="Path to ncu if it is not on PATH.")] = None,
    per_launch: Annotated[bool, typer.Option("--per-launch", help="With '-- COMMAND' or --import: one row per launch instead of one per distinct kernel.")] = False,
    launch_skip: Annotated[int, typer.Option("--launch-skip", help="With '-- COMMAND': skip this many launches first (warm-up); per kernel unless --launch-count is given.")] = 0,
    launch_count: Annotated[Optional[int], typer.Option("--launch-count", help="With '-- COMMAND': profile at most this many matching launches in all.")] = None,
    per_kernel: Annotated[int, typer.Option("--launches-per-kernel", help="With '-- COMMAND': profile the first N launches of each kernel launch configuration (0: every launch).")] = DEFAULT_PER_KERNEL,
    wide: Annotated[bool, typer.Option("--wide", help="Full kernel names, every column and the full advice text.")] = False,
    json_out: JsonOut = None,
    force: Force = False,
    *,
    variant_options: VariantOptions,
) -> None:
    """Profile each variant under Nsight Compute (only its own launches, by NVTX range) and explain it.

    Exit 1 if ncu could not profile a variant (the reasons are printed). Examples:

      gpuprof ncu matmul --variants naive,smem_tiled,cublas --plot roofline.png

      gpuprof ncu -- python my_script.py            (every kernel of any program)

      gpuprof ncu --kernel 'gemm' -- python train.py

      gpuprof ncu --launch-skip 2 -- python mlp.py   (skip 2 warm-ups of each kernel, profile the next)

      gpuprof ncu --import gpuprof-ncu/matmul_naive.ncu-rep --json ncu.json
    """
    with exit_on_error():
        from gpuprof.commands.ncu import import_report, profile_command, profile_family
        from gpuprof.files import check_outputs
        from gpuprof.tools.ncu import SECTIONS, NcuOptions
        from gpuprof.variants import catalog
        from gpuprof.variants.sizes import parse_size

        command = command_after_dashes(ctx)
        target = json_target(json_out)
        check_outputs([import_path, *(variant_options.add or [])], {"--json": target, "--plot": plot}, force)
        if plot is not None and not plot.parent.is_dir():
            raise UsageError(f"--plot {plot}: directory {plot.parent} does not exist")
        if ctx.args:
            raise UsageError(f"unexpected {' '.join(ctx.args)!r}; give one family, or '--' before a command to profile")
        if import_path is not None and (family is not None or command):
            raise UsageError("--import shows a saved report; leave out the family and the command")
        if family is not None and command:
            raise UsageError("give a family or '-- COMMAND', not both")
        if family is not None:
            require_family(family, "ncu")
        extra_metrics = tuple(m.strip() for m in (metrics or "").split(",") if m.strip())
        options = NcuOptions(clock_control=clock_control,
                             sections=tuple(section) if section else (() if set_name else SECTIONS),
                             metrics=NcuOptions().metrics + extra_metrics, set_name=set_name,
                             nvtx_include=tuple(nvtx_include or ()), kernel_regex=kernel)
        console = human_console(target)
        if import_path is not None:
            run = import_report(import_path, ncu_path)
        elif command:
            run = profile_command(list(command), out, replace(options, **launch_filter(launch_skip, launch_count, per_kernel)),
                                  ncu_path)
        elif family is not None:
            [(fam, chosen, extra)] = variant_options.select([catalog.load_family(family)], variants)
            added = {v.name: variant_options.cli_args() for v in extra}
            run = profile_family(fam.name, [v.name for v in chosen], parse_size(fam, size), out, options, ncu_path,
                                 variant_options.defines(),
                                 progress=lambda name: console.print(f"[dim]ncu: profiling {escape(name)}[/]"),
                                 added=added)
        else:
            raise UsageError("name a family (gpuprof ncu matmul), a command (gpuprof ncu -- python x.py) or --import REPORT")
        write_json({"schema": "gpuprof.ncu", "run": run}, target)
        _show(run, plot, target, per_launch=per_launch or run.family is not None, wide=wide)


def launch_filter(skip: int, count: int | None, per_kernel: int) -> dict:
    """NcuOptions' launch filter: a global --launch-count wins; else the first N of each kernel."""
    if skip < 0 or per_kernel < 0:
        raise UsageError("--launch-skip and --launches-per-kernel must be 0 or more")
    if count is not None:
        return {"launch_skip": skip, "launch_count": count, "per_kernel": False}
    return {"launch_skip": skip, "launch_count": per_kernel or None, "per_kernel": True}


def _show(run: NcuRun, plot: Path | None, target, per_launch: bool, wide: bool = False) -> None:
    from gpuprof.analysis import roofline
    from gpuprof.analysis.kernel_summary import summarize_kernels
    from gpuprof.render.kernel_names import short_names
    from gpuprof.render.ncu_view import (
        kernel_points,
        launches_table,
        roofline_table,
        rows_of,
        summary_advice,
        summary_table,
        variant_advice,
    )

    console = human_console(target)
    width = console.width
    rows = rows_of(run)
    if per_launch:
        console.print(launches_table(run, width, wide))
        console.print(variant_advice(run, full=wide))
        points = [p for result in run.results if (p := roofline.point(result.label, result.rows))]
    else:
        console.print(summary_table(run, width, wide))
        console.print(summary_advice(run, full=wide))
        summaries = summarize_kernels(rows)
        points = kernel_points(summaries, short_names([s.name for s in summaries]))
    roof = roofline.roof_from_rows(rows)
    if roof and points:
        console.print(roofline_table(points, roof, None if wide else width))
        if plot is not None:
            from gpuprof.render.roofline_plot import save_roofline

            save_roofline(points, roof, plot, f"{run.family or 'ncu'} roofline ({roof.source})")
            console.print(f"roofline plot written to {plot}")
    elif plot is not None:
        warn(f"--plot {plot}: nothing written; the report has no roofline data (the default sections collect it)")
    reports = list(dict.fromkeys(str(r.report) for r in run.results if r.report))
    if reports:
        console.print(f"reports: {', '.join(reports)}", soft_wrap=True)
    failed = [r for r in run.results if r.error]
    for r in failed:
        console.print(f"[red]{escape(r.label)}:[/] {escape(r.error or '')}")
    if failed:
        raise Finding(f"ncu could not profile {len(failed)} of {len(run.results)}: "
                      + ", ".join(r.label for r in failed[:6]) + (" …" if len(failed) > 6 else ""))
