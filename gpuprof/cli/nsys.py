"""`gpuprof nsys`: the Nsight Systems timeline summary of each variant, of any command, or of a saved report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gpuprof.cli._app import CommandAfterDashes, app, command_after_dashes
from gpuprof.cli._boundary import err_console, exit_on_error, status
from gpuprof.cli._options import Force, JsonOut, Size, Variants, json_target, with_variant_options
from gpuprof.cli._output import human_console
from gpuprof.errors import Finding
from gpuprof.tools.nsys import LIBS_ENV, PROFILE_TIMEOUT_S
from gpuprof.variants.selection import VariantOptions

# = commands.nsys.DEFAULT_OUT and COUNT (a test keeps them equal); not imported, for a fast --help
DEFAULT_OUT = Path("gpuprof-nsys")
COUNT = 3


@app.command(cls=CommandAfterDashes, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@with_variant_options
def nsys(
    ctx: typer.Context,
    family: Annotated[str | None, typer.Argument(
        metavar="FAMILY",
        help="Kernel family, e.g. matmul (see `gpuprof list`). Or give -- COMMAND, or --import.")] = None,
    variants: Variants = None,
    size: Size = None,
    nsys_path: Annotated[str | None, typer.Option(
        "--nsys",
        help="The nsys program. Default: PATH, $CUDA_HOME, Nsight Systems installs, then the copy inside Nsight "
             "Compute (<ncu dir>/host/target-linux-x64/nsys).")] = None,
    lib_path: Annotated[Path | None, typer.Option(
        "--lib-path", file_okay=False,
        help="Folder put first on nsys's LD_LIBRARY_PATH, e.g. one holding libdw.so.1 and libelf.so.1 for the Nsight "
             f"Compute copy (also ${LIBS_ENV}).")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out",
        help="Folder for everything written (.nsys-rep, .sqlite, stats text, Chrome traces); created. Default: "
             f"{DEFAULT_OUT}; with --import nothing is written unless --out is given.")] = None,
    import_report: Annotated[Path | None, typer.Option(
        "--import", dir_okay=False,
        help="Summarise an existing .nsys-rep, or a .sqlite export (read even without nsys).")] = None,
    count: Annotated[int, typer.Option("--count", help="Launches of each variant.")] = COUNT,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds each nsys run may take.")] = PROFILE_TIMEOUT_S,
    json_out: JsonOut = None,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Full kernel names and every column, whatever the terminal width.")] = False,
    force: Force = False,
    *,
    variant_options: VariantOptions,
) -> None:
    """Kernel, memcpy, CUDA API and NVTX range summaries from Nsight Systems (nsys profile, then nsys stats).

    Each variant runs alone in its own process under nsys, inside NVTX ranges FAMILY -> VARIANT.
    Where nsys is missing or cannot make a report, the same summaries come from CUPTI for -- COMMAND (gpuprof's
    injection library, any program), else from the PyTorch profiler, with a Chrome trace for Perfetto.

    Examples:

      gpuprof nsys matmul --variants naive,smem_tiled,cublas

      gpuprof nsys vecadd --size 2^24 --out runs/vecadd --json vecadd-nsys.json

      gpuprof nsys matmul -v blocktile_2d -D BM=64 --add my_matmul.cu

      gpuprof nsys -- python my_script.py --steps 10

      gpuprof nsys --import gpuprof-nsys/matmul-naive.nsys-rep

      gpuprof nsys matmul --lib-path ~/elfutils/lib   (libdw.so.1, libelf.so.1 for the nsys inside Nsight Compute)
    """
    with exit_on_error():
        from gpuprof.commands import nsys as core
        from gpuprof.commands import nsys_results
        from gpuprof.commands.target import Target
        from gpuprof.files import check_outputs
        from gpuprof.render.nsys_view import render_profile

        target = json_target(json_out)
        check_outputs([import_report, *(variant_options.add or [])], {"--json": target}, force)
        request = core.NsysRequest(
            Target(families=(family,) if family is not None else (), variants=variants, size=size,
                   options=variant_options, command=command_after_dashes(ctx), import_path=import_report,
                   unexpected=tuple(ctx.args)),
            out_dir=out, nsys=nsys_path, lib_path=lib_path, count=count, timeout_s=timeout)
        with status("nsys") as spinner:
            result = core.execute(request, lambda p: spinner.update(f"{p.variant}: {p.step} ({p.index + 1}/{p.total})"))
        if target == "-":
            import json

            typer.echo(json.dumps(nsys_results.to_dict(result), indent=1))
        elif target is not None:
            nsys_results.save_profile(result, Path(target))
    console = human_console(target)
    if result.notice:
        err_console.print(f"[yellow]note:[/] {escape(result.notice)}")
    console.print(render_profile(result, console.width, wide))
    if target is not None and target != "-":
        console.print(f"summaries written to {target}")
    if result.failed:
        raise Finding(f"{len(result.failed)} could not be profiled (see above): "
                      + ", ".join(s.label for s in result.failed))
