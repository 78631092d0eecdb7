"""`gpuprof sanitize`: every variant under compute-sanitizer's tools; one row per finding."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from gpuprof.cli._app import CommandAfterDashes, app, command_after_dashes
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
from gpuprof.cli._output import human_console, write_json
from gpuprof.errors import Finding, UsageError

if TYPE_CHECKING:
    from gpuprof.tools.target import LaunchTarget

TOOL_NAMES = "memcheck,racecheck,initcheck,synccheck"  # = tools.sanitizer.TOOLS (a test keeps them equal)


@app.command(cls=CommandAfterDashes)
@with_variant_options
def sanitize(
    ctx: typer.Context,
    targets: Annotated[Optional[list[str]], typer.Argument(help="Families (default: all); a program goes after '--'.")] = None,
    tool: Annotated[str, typer.Option("--tool", help=f"Comma list of tools: {TOOL_NAMES}.")] = TOOL_NAMES,
    variants: Variants = None,
    size: Size = None,
    import_path: Annotated[Optional[Path], typer.Option("--import", help="Parse an existing compute-sanitizer log (text or --xml).", dir_okay=False)] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for the sanitizer logs.")] = Path("gpuprof-sanitize"),
    sanitizer: Annotated[Optional[str], typer.Option("--sanitizer", help="Path to compute-sanitizer.")] = None,
    leak_check: Annotated[bool, typer.Option("--leak-check", help="memcheck also reports device memory not freed at exit (noisy with PyTorch, which keeps its cuBLAS workspaces).")] = False,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", help="Sanitizer processes at a time (they share the GPU; use 1 on a GPU in exclusive-process mode). Default: one per CPU, at most 16 per GPU.")] = None,
    no_skip: Annotated[bool, typer.Option("--no-skip", help="Run every tool on every variant: racecheck even where the kernels use no shared memory (ptxas), racecheck and synccheck on vendor rows.")] = False,
    json_out: JsonOut = None,
    force: Force = False,
    *,
    variant_options: VariantOptions,
) -> None:
    """Run every variant under compute-sanitizer (memcheck, racecheck, initcheck, synccheck); exit 1 on any finding.

    Variants run at their family's middle check size, with plain allocations (memory pools would
    hide out-of-bounds accesses). Examples:

      gpuprof sanitize                          (every family, every variant, every tool)

      gpuprof sanitize matmul --tool memcheck,racecheck

      gpuprof sanitize vecadd --add mine.cu

      gpuprof sanitize -- python my_script.py

      gpuprof sanitize --import memcheck.log --json findings.json
    """
    with exit_on_error():
        from gpuprof.commands.sanitize import (
            SanitizeRun,
            declared_skips,
            default_jobs,
            import_log,
            racecheck_skips,
            sanitize_command,
            sanitize_targets,
        )
        from gpuprof.files import check_outputs
        from gpuprof.tools.sanitizer import TOOLS
        from gpuprof.variants import catalog

        target = json_target(json_out)
        check_outputs([import_path, *(variant_options.add or [])], {"--json": target}, force)
        tools = [t.strip() for t in tool.split(",") if t.strip()]
        unknown = [t for t in tools if t not in TOOLS]
        if jobs is not None and jobs < 1:
            raise UsageError(f"--jobs {jobs}: give at least 1")
        if unknown or not tools:
            raise UsageError(f"unknown --tool '{','.join(unknown)}'; choose from: {', '.join(TOOLS)}")
        command = list(command_after_dashes(ctx))
        families = list(targets or [])
        for name in families:  # a typo is an unknown family, not a program: programs go after '--'
            require_family(name, "sanitize")
        if import_path is not None and (families or command):
            raise UsageError("--import reads a saved log; leave out the families and the command")
        if import_path is not None and tool != TOOL_NAMES:
            raise UsageError("--tool does nothing with --import: the log says which tool wrote it")
        if families and command:
            raise UsageError("give families or '-- COMMAND', not both")
        console = human_console(target)
        workers = jobs or default_jobs()
        if import_path is not None:
            run = SanitizeRun([import_log(import_path)])
        elif command:
            with _bar("sanitize") as step:
                run = sanitize_command(command, tools, out, sanitizer, leak_check, progress=step)
        else:
            chosen = _chosen(families or catalog.family_names(), variants, variant_options)
            skips, notes = (set(), []) if no_skip or "racecheck" not in tools else racecheck_skips(
                [(fam, picked) for fam, picked in chosen], workers)
            skip = {} if no_skip else declared_skips(chosen, tools, no_shared_memory=skips)
            launch = _targets(chosen, size, variant_options)
            with _bar("sanitize") as step:
                run = sanitize_targets(launch, tools, out, sanitizer, leak_check=leak_check, jobs=workers,
                                       progress=step, skip=skip)
            run.notes += notes
        write_json({"schema": "gpuprof.sanitize", "runs": run.results, "notes": run.notes}, target)
    from gpuprof.render.sanitize_view import command_table, families_table, findings_view, skipped_line

    if str(target) != "-":
        console.print(command_table(run.results) if import_path is not None or command else families_table(run, tools))
        extra = skipped_line(run)
        if extra is not None:
            console.print(extra)
        if any(not r.clean for r in run.results):
            console.print(findings_view(run.results))
        if import_path is None:
            console.print(f"[dim]logs: {escape(str(out))}[/]")
    dirty = [r for r in run.results if not r.clean]
    if dirty:
        raise Finding(f"{len(dirty)} of {len(run.results)} runs found problems or could not be judged: "
                      + ", ".join(f"{r.label} {r.tool}" for r in dirty[:6]) + (" …" if len(dirty) > 6 else ""))


@contextmanager
def _bar(what: str):
    """One progress bar on stderr for the whole run; the core reports (done, total, last finished)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("[dim]{task.description}"), console=err_console, transient=True) as bar:
        task = bar.add_task("", total=None)

        def step(done: int, total: int, last: str) -> None:
            bar.update(task, completed=done, total=total, description=last)

        yield step


def _chosen(families: list[str], variants: str | None, options: VariantOptions) -> list[tuple]:
    """(family, variants) per family; with --add or --kernels-dir and no --variants, only the user's."""
    from gpuprof.variants import catalog

    selection = options.select([catalog.load_family(n) for n in families], variants)
    if (options.add or options.kernels_dir is not None) and variants is None:
        return [(fam, [v for v in chosen if v.user]) for fam, chosen, _ in selection]
    return [(fam, chosen) for fam, chosen, _ in selection]


def _targets(chosen: list[tuple], size: str | None, options: VariantOptions) -> list[LaunchTarget]:
    from gpuprof.commands.sanitize import sanitize_size
    from gpuprof.tools.target import LaunchTarget
    from gpuprof.variants.sizes import parse_size

    add_args = options.cli_args()
    defines = options.defines()
    out = []
    for fam, picked in chosen:
        run_size = parse_size(fam, size) if size else sanitize_size(list(fam.check_sizes))
        out += [LaunchTarget(fam.name, v.name, run_size, plain_allocations=True, defines=defines if v.is_cuda else {},
                             add=add_args if v.user else ()) for v in picked]
    return out

