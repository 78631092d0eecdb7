"""`gpuprof sanitize`: every variant under compute-sanitizer's tools; one row per finding."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error, fail
from gpuprof.cli._options import AddOptions, Size, Variants
from gpuprof.commands.sanitize import (
    SanitizeRun,
    default_jobs,
    import_log,
    racecheck_skips,
    sanitize_command,
    sanitize_size,
    sanitize_targets,
)
from gpuprof.errors import UsageError
from gpuprof.render.console import make_console
from gpuprof.render.sanitize_view import command_table, families_table, findings_view, skipped_line
from gpuprof.tools.sanitizer import TOOLS
from gpuprof.tools.target import LaunchTarget
from gpuprof.variants import catalog
from gpuprof.variants.sizes import parse_size

console = make_console()


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def sanitize(
    ctx: typer.Context,
    targets: Annotated[Optional[list[str]], typer.Argument(help="Families (default: all), or '--' and a command.")] = None,
    tool: Annotated[str, typer.Option("--tool", help=f"Comma list of tools: {','.join(TOOLS)}.")] = ",".join(TOOLS),
    variants: Variants = None,
    size: Size = None,
    add: AddOptions.Add = None,
    block: AddOptions.Block = None,
    tile: AddOptions.Tile = None,
    grid: AddOptions.Grid = None,
    kernels_dir: AddOptions.KernelsDir = None,
    import_path: Annotated[Optional[Path], typer.Option("--import", help="Parse an existing compute-sanitizer log (text or --xml).")] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for the sanitizer logs.")] = Path("gpuprof-sanitize"),
    sanitizer: Annotated[Optional[str], typer.Option("--sanitizer", help="Path to compute-sanitizer.")] = None,
    leak_check: Annotated[bool, typer.Option("--leak-check", help="memcheck also reports device memory not freed at exit (noisy with PyTorch, which keeps its cuBLAS workspaces).")] = False,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", help="Sanitizer processes at a time (they share the GPU; use 1 on a GPU in exclusive-process mode). Default: 8 per GPU, at most one per CPU.")] = None,
    no_skip: Annotated[bool, typer.Option("--no-skip", help="Run racecheck on every variant, even those whose kernels use no shared memory (ptxas).")] = False,
) -> None:
    """Run every variant under compute-sanitizer (memcheck, racecheck, initcheck, synccheck); exit 1 on any finding.

    Variants run at their family's middle check size, with plain allocations (memory pools would
    hide out-of-bounds accesses). Examples:

      gpuprof sanitize                          (every family, every variant, every tool)

      gpuprof sanitize matmul --tool memcheck,racecheck

      gpuprof sanitize vecadd --add mine.cu --variants mine

      gpuprof sanitize -- python my_script.py

      gpuprof sanitize --import memcheck.log
    """
    with exit_on_error():
        tools = [t.strip() for t in tool.split(",") if t.strip()]
        unknown = [t for t in tools if t not in TOOLS]
        if jobs is not None and jobs < 1:
            raise UsageError(f"--jobs {jobs}: give at least 1")
        if unknown or not tools:
            raise UsageError(f"unknown --tool '{','.join(unknown)}'; choose from: {', '.join(TOOLS)}")
        names = list(targets or []) + list(ctx.args)
        workers = jobs or default_jobs()
        if import_path is not None:
            run = SanitizeRun([import_log(import_path)])
            command = True
        elif names and names[0] not in catalog.family_names():
            with _bar("sanitize") as step:
                run = sanitize_command(names, tools, out, sanitizer, leak_check, progress=step)
            command = True
        else:
            chosen = _chosen(names or catalog.family_names(), variants, AddOptions.spec(add, block, tile, grid, kernels_dir))
            skips, notes = (set(), []) if no_skip or "racecheck" not in tools else racecheck_skips(
                [(fam, picked) for fam, picked, _ in chosen], workers)
            launch = [t for fam, picked, add_args in chosen for t in _targets(fam, picked, size, add_args)]
            with _bar("sanitize") as step:
                run = sanitize_targets(launch, tools, out, sanitizer, leak_check=leak_check, jobs=workers,
                                       progress=step, skip_racecheck=skips)
            run.notes += notes
            command = False
    console.print(command_table(run.results) if command else families_table(run, tools))
    extra = skipped_line(run)
    if extra is not None:
        console.print(extra)
    if any(not r.clean for r in run.results):
        console.print(findings_view(run.results))
    if import_path is None:
        console.print(f"[dim]logs: {out}[/]")
    dirty = [r for r in run.results if not r.clean]
    if dirty:
        raise fail(f"{len(dirty)} of {len(run.results)} runs found problems or could not be judged: "
                   + ", ".join(f"{r.label} {r.tool}" for r in dirty[:6]) + (" …" if len(dirty) > 6 else ""), 1)


@contextmanager
def _bar(what: str):
    """One progress bar on stderr for the whole run; the core reports (done, total, last finished)."""
    with Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("[dim]{task.description}"), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("", total=None)

        def step(done: int, total: int, last: str) -> None:
            bar.update(task, completed=done, total=total, description=last)

        yield step


def _chosen(families: list[str], variants: str | None, add_spec) -> list[tuple]:
    from gpuprof.variants.user import add_to_family

    out = []
    for name in families:
        fam, extra = add_to_family(catalog.load_family(name), add_spec)
        picked = fam.select(variants) if variants or not extra else extra
        out.append((fam, picked, tuple(add_spec.cli_args()) if add_spec is not None else ()))
    return out


def _targets(fam, picked, size: str | None, add_args: tuple[str, ...]) -> list[LaunchTarget]:
    run_size = parse_size(fam, size) if size else sanitize_size(list(fam.check_sizes))
    return [LaunchTarget(fam.name, v.name, run_size, plain_allocations=True, add=add_args if v.user else ())
            for v in picked]
