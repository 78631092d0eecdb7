"""`gpuprof nsys`: the Nsight Systems timeline summary of each variant, of any command, or of a saved report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from typer.core import TyperCommand

from gpuprof.cli._app import app
from gpuprof.cli._boundary import err_console, exit_on_error, fail
from gpuprof.cli._options import JsonOut, Size, Variants
from gpuprof.commands import nsys as nsys_profile
from gpuprof.errors import UsageError
from gpuprof.render.console import make_console
from gpuprof.render.nsys_view import render_profile
from gpuprof.tools.nsys import LIBS_ENV, PROFILE_TIMEOUT_S

console = make_console()
_COMMAND = "gpuprof.nsys.command"


class CommandAfterDashes(TyperCommand):
    """Everything after the first `--` is the program to profile, verbatim (its own options included)."""

    def parse_args(self, ctx, args):
        if "--" in args:
            cut = args.index("--")
            ctx.meta[_COMMAND] = tuple(args[cut + 1:])
            args = args[:cut]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx):
        return [*super().collect_usage_pieces(ctx), "[-- COMMAND [ARGS]...]"]


def command_after_dashes(ctx: typer.Context) -> tuple[str, ...]:
    return ctx.meta.get(_COMMAND, ())


@app.command(cls=CommandAfterDashes, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def nsys(
    ctx: typer.Context,
    family: Annotated[str | None, typer.Argument(metavar="FAMILY", help="Kernel family, e.g. matmul (see `gpuprof list`). Or give -- COMMAND, or --import.")] = None,
    variants: Variants = None,
    size: Size = None,
    nsys_path: Annotated[str | None, typer.Option("--nsys", help="The nsys program. Default: PATH, $CUDA_HOME, Nsight Systems installs, then the copy inside Nsight Compute (<ncu dir>/host/target-linux-x64/nsys).")] = None,
    lib_path: Annotated[Path | None, typer.Option("--lib-path", help=f"Folder put first on nsys's LD_LIBRARY_PATH, e.g. one holding libdw.so.1 and libelf.so.1 for the Nsight Compute copy (also ${LIBS_ENV}).", file_okay=False)] = None,
    out: Annotated[Path, typer.Option("--out", help="Folder for everything written (.nsys-rep, .sqlite, stats text, Chrome traces); created.")] = nsys_profile.DEFAULT_OUT,
    import_report: Annotated[Path | None, typer.Option("--import", help="Summarise an existing .nsys-rep, or a .sqlite export (read even without nsys).", dir_okay=False)] = None,
    count: Annotated[int, typer.Option("--count", help="Launches of each variant.")] = nsys_profile.COUNT,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds each nsys run may take.")] = PROFILE_TIMEOUT_S,
    json_out: JsonOut = None,
    wide: Annotated[bool, typer.Option("--wide", help="Full kernel names and every column, whatever the terminal width.")] = False,
) -> None:
    """Kernel, memcpy, CUDA API and NVTX range summaries from Nsight Systems (nsys profile, then nsys stats).

    Each variant runs alone in its own process under nsys, inside NVTX ranges FAMILY -> VARIANT.
    Without nsys, the same summaries come from the PyTorch profiler (CUPTI), with a Chrome trace for Perfetto.

    Examples:

      gpuprof nsys matmul --variants naive,smem_tiled,cublas

      gpuprof nsys vecadd --size 2^24 --out runs/vecadd --json vecadd-nsys.json

      gpuprof nsys -- python my_script.py --steps 10

      gpuprof nsys --import gpuprof-nsys/matmul-naive.nsys-rep

      gpuprof nsys matmul --lib-path ~/elfutils/lib   (libdw.so.1, libelf.so.1 for the nsys inside Nsight Compute)
    """
    with exit_on_error():
        request = nsys_profile.NsysRequest(
            family=family, variants=variants, size=size, command=ctx.meta.get(_COMMAND, ()), import_path=import_report,
            out_dir=out, nsys=nsys_path, lib_path=lib_path, count=count, timeout_s=timeout, unexpected=tuple(ctx.args))
        if json_out is not None and not json_out.parent.is_dir():
            raise UsageError(f"--json {json_out}: directory {json_out.parent} does not exist")
        with err_console.status("nsys", spinner="dots") as status:
            result = nsys_profile.profile(request, lambda p: status.update(f"{p.variant}: {p.step} ({p.index + 1}/{p.total})"))
        if json_out is not None:
            nsys_profile.save_profile(result, json_out)
    if result.notice:
        err_console.print(f"[yellow]note:[/] {escape(result.notice)}")
    console.print(render_profile(result, console.width, wide))
    if json_out is not None:
        console.print(f"summaries written to {json_out}")
    if result.failed:
        raise fail(f"{len(result.failed)} could not be profiled (see above): " + escape(", ".join(s.label for s in result.failed)), 1)
