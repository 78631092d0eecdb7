"""`gpuprof ncu`: each variant under Nsight Compute, parsed into tables, advice and a roofline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from gpuprof.cli._app import COMMAND_KEY, CommandAfterDashes, app
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

      gpuprof ncu --import gpuprof-ncu/matmul_naive.ncu-rep --json ncu.json
    """
    with exit_on_error():
        from gpuprof.commands.ncu import import_report, profile_command, profile_family
        from gpuprof.files import check_outputs
        from gpuprof.tools.ncu import SECTIONS, NcuOptions
        from gpuprof.variants import catalog
        from gpuprof.variants.sizes import parse_size

        command = ctx.meta.get(COMMAND_KEY, ())
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
            run = profile_command(list(command), out, options, ncu_path)
        elif family is not None:
            [(fam, chosen, extra)] = variant_options.select([catalog.load_family(family)], variants)
            added = {v.name: variant_options.cli_args() for v in extra}
            run = profile_family(fam.name, [v.name for v in chosen], parse_size(fam, size), out, options, ncu_path,
                                 variant_options.defines(),
                                 progress=lambda name: console.print(f"[dim]ncu: profiling {escape(name)}…[/]"),
                                 added=added)
        else:
            raise UsageError("name a family (gpuprof ncu matmul), a command (gpuprof ncu -- python x.py) or --import REPORT")
        write_json({"schema": "gpuprof.ncu", "run": run}, target)
        _show(run, plot, target)


def _show(run: NcuRun, plot: Path | None, target) -> None:
    from gpuprof.analysis import roofline
    from gpuprof.render.ncu_view import advice_table, kernels_table, roofline_table

    console = human_console(target)
    console.print(kernels_table(run))
    console.print(advice_table(run))
    rows = [r for result in run.results for r in result.rows]
    roof = roofline.roof_from_rows(rows)
    points = [p for result in run.results if (p := roofline.point(result.label, result.rows))]
    if roof and points:
        console.print(roofline_table(points, roof))
        if plot is not None:
            from gpuprof.render.roofline_plot import save_roofline

            save_roofline(points, roof, plot, f"{run.family or 'ncu'} roofline ({roof.source})")
            console.print(f"roofline plot written to {plot}")
    elif plot is not None:
        warn(f"--plot {plot}: nothing written; the report has no roofline data (the default sections collect it)")
    reports = [str(r.report) for r in run.results if r.report]
    if reports:
        console.print(f"reports: {', '.join(reports)}")
    failed = [r for r in run.results if r.error]
    for r in failed:
        console.print(f"[red]{escape(r.label)}:[/] {escape(r.error or '')}")
    if failed:
        raise Finding(f"ncu could not profile {len(failed)} of {len(run.results)}: "
                      + ", ".join(r.label for r in failed[:6]) + (" …" if len(failed) > 6 else ""))
