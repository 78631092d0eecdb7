"""`gpuprof devicequery`: the device's properties, live state, versions and ceilings."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error
from gpuprof.render.console import make_console
from gpuprof.render.devicequery_view import devicequery_tables

console = make_console()


@app.command()
def devicequery(
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON.")] = False,
    measure: Annotated[bool, typer.Option("--measure", help="Measure copy bandwidth and FP32/TF32/BF16 matrix throughput (about 10 s) and cache them for this GPU; `run` then reports % of these.")] = False,
) -> None:
    """Everything deviceQuery prints, live NVML state, versions, and the ceilings `run` compares against.

    Examples: gpuprof devicequery; gpuprof devicequery --measure --json
    """
    from gpuprof.commands import devicequery as core

    with exit_on_error():
        if measure:
            core.measure()
        data = core.query()
    if as_json:
        print(json.dumps(data, indent=1))
        return
    for table in devicequery_tables(data):
        console.print(table)


@app.command()
def doctor(as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False) -> None:
    """Which tools and libraries this machine has (GPU, CuPy, PyTorch, nvcc, ncu, nsys, compute-sanitizer,
    counter permissions), their versions, and what to do about each one that is missing. Exit 3 if any is.

    Example: gpuprof doctor
    """
    from gpuprof.commands.doctor import diagnose

    checks = diagnose()
    if as_json:
        print(json.dumps([c.__dict__ for c in checks], indent=1))
    else:
        table = Table(title="gpuprof doctor", title_justify="left")
        for head in ("", "check", "result", "needed for"):
            table.add_column(head)
        for c in checks:
            table.add_row("[green]ok[/]" if c.ok else "[red]no[/]", c.name, c.detail, c.needed_for)
        console.print(table)
    if not all(c.ok for c in checks):
        raise typer.Exit(code=3)
