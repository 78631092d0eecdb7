"""`gpuprof ncu`: each variant under Nsight Compute, parsed into tables, advice and a roofline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from gpuprof.analysis import roofline
from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error, fail
from gpuprof.cli._options import AddOptions, Defines, Size, Variants, parse_defines
from gpuprof.commands.ncu import NcuRun, import_report, profile_command, profile_family
from gpuprof.errors import UsageError
from gpuprof.render.console import make_console
from gpuprof.render.ncu_view import advice_table, kernels_table, roofline_table
from gpuprof.render.roofline_plot import save_roofline
from gpuprof.tools.ncu import SECTIONS, NcuOptions
from gpuprof.variants import catalog
from gpuprof.variants.sizes import parse_size
from gpuprof.variants.user import add_to_family

console = make_console()


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def ncu(
    ctx: typer.Context,
    family: Annotated[Optional[str], typer.Argument(help="Kernel family; or '--' and a command to profile.")] = None,
    variants: Variants = None,
    size: Size = None,
    define: Defines = None,
    add: AddOptions.Add = None,
    block: AddOptions.Block = None,
    tile: AddOptions.Tile = None,
    grid: AddOptions.Grid = None,
    kernels_dir: AddOptions.KernelsDir = None,
    clock_control: Annotated[str, typer.Option("--clock-control", help="'none' (default: clocks as found, so durations match `run`) or 'base' (ncu locks base clocks).")] = "none",
    section: Annotated[Optional[list[str]], typer.Option("--section", help="ncu section to collect (repeatable); replaces the default set.")] = None,
    set_name: Annotated[Optional[str], typer.Option("--set", help="ncu section set, e.g. full.")] = None,
    metrics: Annotated[Optional[str], typer.Option("--metrics", help="Extra comma-separated ncu metrics.")] = None,
    kernel: Annotated[Optional[str], typer.Option("--kernel", help="With '-- COMMAND': profile kernels whose name matches this regex.")] = None,
    nvtx_include: Annotated[Optional[list[str]], typer.Option("--nvtx-include", help="With '-- COMMAND': ncu NVTX filter, e.g. 'matmul/naive/' (repeatable).")] = None,
    import_path: Annotated[Optional[Path], typer.Option("--import", help="Show an existing .ncu-rep instead of profiling (no GPU needed).")] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for the .ncu-rep reports and ncu logs.")] = Path("gpuprof-ncu"),
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Also save the roofline as PNG or SVG here.")] = None,
    ncu_path: Annotated[Optional[str], typer.Option("--ncu", help="Path to ncu if it is not on PATH.")] = None,
) -> None:
    """Profile each variant under Nsight Compute (only its own launches, by NVTX range) and explain it.

    Examples:

      gpuprof ncu matmul --variants naive,smem_tiled,cublas --plot roofline.png

      gpuprof ncu -- python my_script.py            (every kernel of any program)

      gpuprof ncu --kernel 'gemm' -- python train.py

      gpuprof ncu --import gpuprof-ncu/matmul_naive.ncu-rep
    """
    with exit_on_error():
        if plot is not None and not plot.parent.is_dir():
            raise UsageError(f"--plot {plot}: directory {plot.parent} does not exist")
        extra_metrics = tuple(m.strip() for m in (metrics or "").split(",") if m.strip())
        options = NcuOptions(clock_control=clock_control,
                             sections=tuple(section) if section else (() if set_name else SECTIONS),
                             metrics=NcuOptions().metrics + extra_metrics, set_name=set_name,
                             nvtx_include=tuple(nvtx_include or ()), kernel_regex=kernel)
        if import_path is not None:
            run = import_report(import_path, ncu_path)
        elif ctx.args:
            if family is not None:
                ctx.args.insert(0, family)
            run = profile_command(list(ctx.args), out, options, ncu_path)
        elif family is not None:
            fam = catalog.load_family(family)
            spec = AddOptions.spec(add, block, tile, grid, kernels_dir)
            fam, extra = add_to_family(fam, spec)
            chosen = fam.select(variants) if variants or not extra else extra
            defines = parse_defines(define)
            fam.apply_defines(chosen, defines)
            added = {v.name: tuple(spec.cli_args()) for v in extra} if spec else {}
            run = profile_family(fam.name, [v.name for v in chosen], parse_size(fam, size), out, options, ncu_path,
                                 defines, progress=lambda name: console.print(f"[dim]ncu: profiling {name}…[/]"),
                                 added=added)
        else:
            raise UsageError("name a family (gpuprof ncu matmul), a command (gpuprof ncu -- python x.py) or --import REPORT")
        _show(run, plot)


def _show(run: NcuRun, plot: Path | None) -> None:
    console.print(kernels_table(run))
    console.print(advice_table(run))
    rows = [r for result in run.results for r in result.rows]
    roof = roofline.roof_from_rows(rows)
    points = [p for result in run.results if (p := roofline.point(result.label, result.rows))]
    if roof and points:
        console.print(roofline_table(points, roof))
        if plot is not None:
            save_roofline(points, roof, plot, f"{run.family or 'ncu'} roofline ({roof.source})")
            console.print(f"roofline plot written to {plot}")
    reports = [str(r.report) for r in run.results if r.report]
    if reports:
        console.print(f"reports: {', '.join(reports)}")
    failed = [r for r in run.results if r.error]
    for r in failed:
        console.print(f"[red]{r.label}:[/] {escape(r.error or '')}")
    if failed and len(failed) == len(run.results):
        raise fail("ncu profiled none of the variants (see the reasons above)", 3)
