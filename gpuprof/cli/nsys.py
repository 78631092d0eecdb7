"""`gpuprof nsys`: the Nsight Systems timeline summary of each variant, of any command, or of a saved report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gpuprof.cli._app import COMMAND_KEY, CommandAfterDashes, app
from gpuprof.cli._boundary import err_console, exit_on_error
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
from gpuprof.cli._output import human_console
from gpuprof.errors import Finding, UsageError
from gpuprof.tools.nsys import LIBS_ENV, PROFILE_TIMEOUT_S

IMPORTABLE = (".nsys-rep", ".sqlite", ".qdrep")
# = commands.nsys.DEFAULT_OUT and COUNT (a test keeps them equal); not imported, for a fast --help
DEFAULT_OUT = Path("gpuprof-nsys")
COUNT = 3


@app.command(cls=CommandAfterDashes, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@with_variant_options
def nsys(
    ctx: typer.Context,
    family: Annotated[str | None, typer.Argument(metavar="FAMILY", help="Kernel family, e.g. matmul (see `gpuprof list`). Or give -- COMMAND, or --import.")] = None,
    variants: Variants = None,
    size: Size = None,
    nsys_path: Annotated[str | None, typer.Option("--nsys", help="The nsys program. Default: PATH, $CUDA_HOME, Nsight Systems installs, then the copy inside Nsight Compute (<ncu dir>/host/target-linux-x64/nsys).")] = None,
    lib_path: Annotated[Path | None, typer.Option("--lib-path", help=f"Folder put first on nsys's LD_LIBRARY_PATH, e.g. one holding libdw.so.1 and libelf.so.1 for the Nsight Compute copy (also ${LIBS_ENV}).", file_okay=False)] = None,
    out: Annotated[Path | None, typer.Option("--out", help=f"Folder for everything written (.nsys-rep, .sqlite, stats text, Chrome traces); created. Default: {DEFAULT_OUT}; with --import nothing is written unless --out is given.")] = None,
    import_report: Annotated[Path | None, typer.Option("--import", help="Summarise an existing .nsys-rep, or a .sqlite export (read even without nsys).", dir_okay=False)] = None,
    count: Annotated[int, typer.Option("--count", help="Launches of each variant.")] = COUNT,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds each nsys run may take.")] = PROFILE_TIMEOUT_S,
    json_out: JsonOut = None,
    wide: Annotated[bool, typer.Option("--wide", help="Full kernel names and every column, whatever the terminal width.")] = False,
    force: Force = False,
    *,
    variant_options: VariantOptions,
) -> None:
    """Kernel, memcpy, CUDA API and NVTX range summaries from Nsight Systems (nsys profile, then nsys stats).

    Each variant runs alone in its own process under nsys, inside NVTX ranges FAMILY -> VARIANT.
    Without nsys, the same summaries come from the PyTorch profiler (CUPTI), with a Chrome trace for Perfetto.

    Examples:

      gpuprof nsys matmul --variants naive,smem_tiled,cublas

      gpuprof nsys vecadd --size 2^24 --out runs/vecadd --json vecadd-nsys.json

      gpuprof nsys matmul -v blocktile_2d -D BM=64 --add my_matmul.cu

      gpuprof nsys -- python my_script.py --steps 10

      gpuprof nsys --import gpuprof-nsys/matmul-naive.nsys-rep

      gpuprof nsys matmul --lib-path ~/elfutils/lib   (libdw.so.1, libelf.so.1 for the nsys inside Nsight Compute)
    """
    with exit_on_error():
        from gpuprof.commands import nsys as nsys_profile
        from gpuprof.files import check_outputs
        from gpuprof.render.nsys_view import render_profile

        target = json_target(json_out)
        check_outputs([import_report, *(variant_options.add or [])], {"--json": target}, force)
        if import_report is not None:  # the input before the tool: a wrong file is not "nsys missing"
            if not import_report.is_file():
                raise UsageError(f"--import {import_report}: no such file")
            if import_report.suffix not in IMPORTABLE:
                raise UsageError(f"--import {import_report}: not an Nsight Systems report; give a "
                                 f"{' or '.join(IMPORTABLE[:2])} file")
        if family is not None and family.isidentifier():
            require_family(family, "nsys")
        selection, defines, added = None, {}, {}
        if variant_options != VariantOptions():
            if family is None or not family.isidentifier():
                raise UsageError("-D, --add, --block/--tile/--grid and --kernels-dir go with a FAMILY, "
                                 "not with -- COMMAND or --import")
            from gpuprof.variants import catalog

            [(fam, chosen, extra)] = variant_options.select([catalog.load_family(family)], variants)
            selection, defines = (fam, tuple(chosen)), variant_options.defines()
            added = {v.name: variant_options.cli_args() for v in extra}
        scratch = None
        if out is None and import_report is not None:  # --import writes nothing unless asked
            import tempfile

            scratch = tempfile.TemporaryDirectory(prefix="gpuprof-nsys-")
        out_dir = Path(scratch.name) if scratch is not None else (out or DEFAULT_OUT)
        request = nsys_profile.NsysRequest(
            family=family, variants=variants, size=size, command=ctx.meta.get(COMMAND_KEY, ()), import_path=import_report,
            out_dir=out_dir, nsys=nsys_path, lib_path=lib_path, count=count, timeout_s=timeout, unexpected=tuple(ctx.args),
            selection=selection, defines=defines, added=added)
        with err_console.status("nsys", spinner="dots") as status:
            try:
                result = nsys_profile.profile(request, lambda p: status.update(f"{p.variant}: {p.step} ({p.index + 1}/{p.total})"))
            finally:
                if scratch is not None:
                    scratch.cleanup()
        if scratch is not None:  # the scratch folder is gone: name the report itself, not it
            from dataclasses import replace

            result = replace(result, out_dir=import_report)
        if target == "-":
            import json

            typer.echo(json.dumps(nsys_profile.to_dict(result), indent=1))
        elif target is not None:
            nsys_profile.save_profile(result, target)
    console = human_console(target)
    if result.notice:
        err_console.print(f"[yellow]note:[/] {escape(result.notice)}")
    console.print(render_profile(result, console.width, wide))
    if target is not None and target != "-":
        console.print(f"summaries written to {target}")
    if result.failed:
        raise Finding(f"{len(result.failed)} could not be profiled (see above): " + ", ".join(s.label for s in result.failed))
