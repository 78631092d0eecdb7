"""`gpuprof show RESULTS.json`: the `run` table of any results file, on a machine without a GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error
from gpuprof.cli._output import human_console
from gpuprof.errors import Finding


@app.command()
def show(
    results_file: Annotated[Path, typer.Argument(
        metavar="RESULTS.json", help="A results file from run, suite or pytest --gpuprof-json.")],
    wide: Annotated[bool, typer.Option(
        "--wide", help="Every column of the table, whatever the terminal width.")] = False,
) -> None:
    """Print a results file as `gpuprof run` printed it (ceilings of the file's GPU); exit 1 if a row failed.

    Example: gpuprof show matmul.json
    """
    from gpuprof.commands.show import show as show_file
    from gpuprof.render.tables import print_run_tables

    with exit_on_error():
        shown = show_file(results_file)
    console = human_console(None)
    if shown.results.command:
        gpu_name = shown.results.environment.get("gpu_name", "unknown GPU")
        console.print(f"{results_file}: {shown.results.command} ({gpu_name}, {shown.results.created_utc or 'undated'})",
                      markup=False, highlight=False)  # the file's words are text, not Rich markup
    print_run_tables(console, shown, wide)
    from gpuprof.render.row_story_view import print_row_story

    print_row_story(console, shown.results.rows, wide)  # the ncu and sanitizer fields of `--with` rows
    if shown.ceilings is None:
        console.print("% ceiling: not shown; no ceilings are known for this file's GPU.")
    if shown.failed:
        raise Finding(f"{len(shown.failed)} row(s) failed: "
                      + ", ".join(f"{r.id} {r.check.status.upper()}" for r in shown.failed))
