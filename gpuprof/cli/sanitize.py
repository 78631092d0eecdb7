"""`gpuprof sanitize`: every variant under compute-sanitizer's tools; one row per finding."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Self

import typer
from rich.markup import escape

from gpuprof.cli._app import CommandAfterDashes, app, command_after_dashes
from gpuprof.cli._boundary import err_console, exit_on_error
from gpuprof.cli._options import Force, JsonOut, Size, Variants, json_target, with_variant_options
from gpuprof.cli._output import human_console, write_json
from gpuprof.errors import Finding
from gpuprof.variants.selection import VariantOptions

if TYPE_CHECKING:
    from gpuprof.progress import Progress

# = tools.sanitizer.TOOLS and commands.sanitize.DEFAULT_OUT (a test keeps them equal); not imported, for a fast --help
TOOL_NAMES = "memcheck,racecheck,initcheck,synccheck"
DEFAULT_OUT = Path("gpuprof-sanitize")


@app.command(cls=CommandAfterDashes)
@with_variant_options
def sanitize(
    ctx: typer.Context,
    targets: Annotated[list[str] | None, typer.Argument(
        help="Families (default: all); a program goes after '--'.")] = None,
    tool: Annotated[str, typer.Option("--tool", help=f"Comma list of tools: {TOOL_NAMES}.")] = TOOL_NAMES,
    variants: Variants = None,
    size: Size = None,
    import_path: Annotated[Path | None, typer.Option(
        "--import", dir_okay=False, help="Parse an existing compute-sanitizer log (text or --xml).")] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for the sanitizer logs.")] = DEFAULT_OUT,
    sanitizer: Annotated[str | None, typer.Option("--sanitizer", help="Path to compute-sanitizer.")] = None,
    leak_check: Annotated[bool, typer.Option(
        "--leak-check",
        help="memcheck also reports device memory not freed at exit (noisy with PyTorch, which keeps its cuBLAS "
             "workspaces).")] = False,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j",
        help="Sanitizer processes at a time (they share the GPU; use 1 on a GPU in exclusive-process mode). Default: "
             "one per CPU, at most 16 per GPU.")] = None,
    no_skip: Annotated[bool, typer.Option(
        "--no-skip",
        help="Run every tool on every variant: racecheck even where the kernels use no shared memory (ptxas), "
             "racecheck and synccheck on vendor rows.")] = False,
    json_out: JsonOut = None,
    force: Force = False,
    *,
    variant_options: VariantOptions,
) -> None:
    """Run every variant under compute-sanitizer (memcheck, racecheck, initcheck, synccheck); exit 1 on any finding.

    Variants run at their family's middle check size, with plain allocations (memory pools would
    hide out-of-bounds accesses).

    Examples:

      gpuprof sanitize                          (every family, every variant, every tool)

      gpuprof sanitize matmul --tool memcheck,racecheck

      gpuprof sanitize vecadd --add mine.cu

      gpuprof sanitize -- python my_script.py

      gpuprof sanitize --import memcheck.log --json findings.json
    """
    with exit_on_error():
        from gpuprof.commands import sanitize as core
        from gpuprof.commands.target import Target
        from gpuprof.files import check_outputs

        target = json_target(json_out)
        check_outputs([import_path, *(variant_options.add or [])], {"--json": target}, force)
        command = command_after_dashes(ctx)
        tools = tuple(t.strip() for t in tool.split(",") if t.strip())
        request = core.SanitizeRequest(
            Target(families=tuple(targets or ()), variants=variants, size=size, options=variant_options,
                   command=command, import_path=import_path),
            tools=tools, out_dir=out, sanitizer=sanitizer, leak_check=leak_check, jobs=jobs, no_skip=no_skip)
        console = human_console(target)
        with _Bar("sanitize") as bar:
            run = core.execute(request, bar)
        write_json({"schema": "gpuprof.sanitize", "runs": run.results, "notes": run.notes,
                    "wall_seconds": run.wall_seconds, "longest_child": run.longest_child}, target)
    from gpuprof.render.sanitize_view import command_table, families_table, findings_view, scope_line, skipped_line

    if str(target) != "-":
        console.print(command_table(run.results) if import_path is not None or command
                      else families_table(run, list(tools)))
        extras = [skipped_line(run), scope_line(run.results) if command else None]
        for extra in extras:
            if extra is not None:
                console.print(extra)
        if any(not r.clean for r in run.results):
            console.print(findings_view(run.results, width=console.width))
        if import_path is None:
            console.print(f"[dim]logs: {escape(str(out))}[/]")
        timing = run.timing_line()
        if timing is not None:
            console.print(f"[dim]{escape(timing)}[/]")
    dirty = [r for r in run.results if not r.clean]
    if dirty:
        raise Finding(f"{len(dirty)} of {len(run.results)} runs found problems or could not be judged: "
                      + ", ".join(f"{r.label} {r.tool}" for r in dirty[:6]) + (" …" if len(dirty) > 6 else ""))


class _Bar:
    """One progress bar on stderr for the whole run, drawn from the core's START event (a run that stops
    at a usage error, or reads a log, draws none) and moved by its DONE events."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.bar: Any = None
        self.task: Any = None

    def __call__(self, step: Progress) -> None:
        from gpuprof.progress import DONE

        if not err_console.is_terminal:
            return  # in a log or pipe: no bar (it would leave an empty line before an error)
        if self.bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self.bar = RichProgress(TextColumn(self.what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                    TextColumn("[dim]{task.description}"), console=err_console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=None)
        if step.step == DONE:
            self.bar.update(self.task, completed=step.finished, total=step.total, description=escape(step.variant))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
