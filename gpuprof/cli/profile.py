"""`gpuprof profile -- COMMAND`: the timeline, then Nsight Compute on the kernels that take the time."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gpuprof.cli._app import CommandAfterDashes, app, command_after_dashes
from gpuprof.cli._boundary import err_console, exit_on_error, status
from gpuprof.cli._options import Force, JsonOut, json_target
from gpuprof.cli._output import human_console, write_json
from gpuprof.tools.nsys import PROFILE_TIMEOUT_S

# = commands.profile's DEFAULT_OUT, COVER_PCT, MAX_KERNELS and commands.ncu's LAUNCHES_PER_KERNEL (a test keeps
# them equal); not imported, for a fast --help
DEFAULT_OUT = Path("gpuprof-profile")
COVER_PCT = 80.0
MAX_KERNELS = 5
LAUNCHES_PER_KERNEL = 1


@app.command(cls=CommandAfterDashes, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def profile(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option(
        "--out", help="Folder for the timeline and the ncu reports; created.")] = DEFAULT_OUT,
    cover: Annotated[float, typer.Option(
        "--cover", help="Profile the largest kernels until they hold this % of the GPU time.")] = COVER_PCT,
    top: Annotated[int, typer.Option("--top", help="At most this many distinct kernels under ncu.")] = MAX_KERNELS,
    launch_skip: Annotated[int, typer.Option(
        "--launch-skip", help="Under ncu, skip this many launches of each kernel configuration first (warm-up).")] = 0,
    per_kernel: Annotated[int, typer.Option(
        "--launches-per-kernel",
        help="Under ncu, profile this many launches of each kernel configuration (0: all).")] = LAUNCHES_PER_KERNEL,
    kernel: Annotated[str | None, typer.Option(
        "--kernel", help="Only the timeline's kernels whose name matches this regex go to ncu (as on `gpuprof ncu "
                         "-- COMMAND`).")] = None,
    nvtx: Annotated[str | None, typer.Option(
        "--nvtx", help="ncu profiles the kernels launched inside this NVTX range (a name, or an ncu NVTX "
                       "expression such as 'matmul/tiled/'); --top and --cover then do not apply.")] = None,
    nsys_path: Annotated[str | None, typer.Option(
        "--nsys",
        help="The nsys program (default: found as `gpuprof nsys` finds it; without it, CUPTI through gpuprof's "
             "injection library, else the PyTorch profiler for Python programs).")] = None,
    ncu_path: Annotated[str | None, typer.Option("--ncu", help="Path to ncu if it is not on PATH.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds the timeline run may take.")] = PROFILE_TIMEOUT_S,
    json_out: JsonOut = None,
    force: Force = False,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Full kernel names, every column and the full advice text.")] = False,
) -> None:
    """Where a program's GPU time goes, then why: the timeline picks the kernels, ncu explains them.

    Runs the program twice: under nsys (or CUPTI, else the PyTorch profiler, where nsys is missing or
    cannot make a report, with a note saying why) to find the kernels that take most of the GPU time
    and where the GPU sat idle, then under Nsight Compute for only the chosen kernels: your own kernels first (your
    binary's, Triton, NVRTC/CuPy, extensions), then the library kernels (PyTorch, cuBLAS, cuDNN, ...)
    that take most of the time (docs/kernel-origin.md).

    Examples:

      gpuprof profile -- python mlp.py

      gpuprof profile --top 3 --launch-skip 2 -- python train.py --steps 5

      gpuprof profile --kernel softmax -- python triton_softmax.py

      gpuprof profile --nvtx tiled -- ./matmul      (the kernels inside NVTX range 'tiled')
    """
    with exit_on_error():
        from rich.table import Table

        from gpuprof.commands import profile as core
        from gpuprof.commands.target import Target
        from gpuprof.files import check_outputs
        from gpuprof.render.fit import print_table
        from gpuprof.render.profile_view import files_line, render_report

        target = json_target(json_out)
        check_outputs([], {"--json": target}, force)
        request = core.ProfileRequest(Target(command=command_after_dashes(ctx), unexpected=tuple(ctx.args)),
                                      out_dir=out, cover_pct=cover, max_kernels=top, launch_skip=launch_skip,
                                      launches_per_kernel=per_kernel, nsys=nsys_path, ncu=ncu_path, timeout_s=timeout,
                                      kernel_filter=kernel, nvtx=nvtx)
        with status("profile: timeline, then ncu"):
            report = core.execute(request)
        write_json({"schema": "gpuprof.profile", **core.to_dict(report)}, target)
        if report.timeline.notice:  # why the timeline is not nsys's, and how to get nsys working
            err_console.print(f"[yellow]note:[/] {escape(report.timeline.notice)}")
        for note in report.notes:
            err_console.print(f"[dim]note: {escape(note)}[/]")
        console = human_console(target)
        if str(target) != "-":
            for part in render_report(report, console.width, wide).renderables:
                print_table(console, part, wide) if isinstance(part, Table) else console.print(part)
        console.print(files_line(report), soft_wrap=True, style="dim")
        if report.ncu_problem is not None:
            raise report.ncu_problem  # the timeline is shown; the exit code says why ncu could not run
