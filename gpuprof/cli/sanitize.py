"""`gpuprof sanitize`: every variant under compute-sanitizer's tools; one row per finding."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error, fail
from gpuprof.cli._options import AddOptions, Size, Variants
from gpuprof.commands.sanitize import import_log, sanitize_command, sanitize_size, sanitize_targets
from gpuprof.errors import UsageError
from gpuprof.render.console import make_console
from gpuprof.render.sanitize_view import findings_table, summary_table
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
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Sanitizer processes at a time (they share the GPU; use 1 on a GPU in exclusive-process mode).")] = 4,
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
        if jobs < 1:
            raise UsageError(f"--jobs {jobs}: give at least 1")
        if unknown or not tools:
            raise UsageError(f"unknown --tool '{','.join(unknown)}'; choose from: {', '.join(TOOLS)}")
        names = list(targets or []) + list(ctx.args)
        if import_path is not None:
            results = [import_log(import_path)]
        elif names and names[0] not in catalog.family_names():
            results = sanitize_command(names, tools, out, sanitizer, leak_check)
        else:
            launch = _targets(names or catalog.family_names(), variants, size, AddOptions.spec(add, block, tile, grid, kernels_dir))
            results = sanitize_targets(launch, tools, out, sanitizer, leak_check=leak_check, jobs=jobs,
                                       progress=lambda what: console.print(f"[dim]sanitize: {what}…[/]"))
    console.print(summary_table(results))
    if any(r.findings for r in results):
        console.print(findings_table(results))
    dirty = [r for r in results if not r.clean]
    if dirty:
        raise fail(f"{len(dirty)} of {len(results)} runs found problems: "
                   + ", ".join(f"{r.label} {r.tool}" for r in dirty[:6]) + (" …" if len(dirty) > 6 else ""), 1)


def _targets(families: list[str], variants: str | None, size: str | None, add_spec) -> list[LaunchTarget]:
    from gpuprof.variants.user import add_to_family

    out = []
    for name in families:
        fam = catalog.load_family(name)
        fam, extra = add_to_family(fam, add_spec)
        chosen = fam.select(variants) if variants or not extra else extra
        run_size = parse_size(fam, size) if size else sanitize_size(list(fam.check_sizes))
        add_args = tuple(add_spec.cli_args()) if add_spec is not None else ()
        out += [LaunchTarget(fam.name, v.name, run_size, plain_allocations=True,
                             add=add_args if v.user else ()) for v in chosen]
    return out
