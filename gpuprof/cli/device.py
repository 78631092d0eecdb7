"""`gpuprof devicequery` and `gpuprof doctor`: the device, and what this machine has."""

from __future__ import annotations

from typing import Annotated

import typer

from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error
from gpuprof.cli._options import Force, JsonOut, json_target
from gpuprof.cli._output import human_console, write_json
from gpuprof.errors import EnvironmentProblem


@app.command()
def devicequery(
    json_out: JsonOut = None,
    force: Force = False,
    measure: Annotated[bool, typer.Option(
        "--measure",
        help="Measure copy bandwidth and FP32/TF32/BF16 matrix throughput (about 10 s) and cache them for this GPU; "
             "`run` then reports % of these.")] = False,
) -> None:
    """Everything deviceQuery prints, live NVML state, versions, and the ceilings `run` compares against.

    Examples: gpuprof devicequery; gpuprof devicequery --measure --json -
    """
    from gpuprof.commands import devicequery as core
    from gpuprof.files import check_outputs
    from gpuprof.render.fit import print_table

    with exit_on_error():
        target = json_target(json_out)
        check_outputs([], {"--json": target}, force)
        if measure:
            core.measure()
        data = core.query()
        write_json({"schema": "gpuprof.devicequery", **data}, target)
    if str(target) == "-":
        return
    from gpuprof.render.devicequery_view import devicequery_tables

    console = human_console(target)
    for table in devicequery_tables(data):
        print_table(console, table, wide=False)


@app.command()
def doctor(json_out: JsonOut = None, force: Force = False) -> None:
    """Which tools and libraries this machine has (GPU, CuPy, nvcc; PyTorch, Triton, ncu, nsys,
    compute-sanitizer, counter permissions, ...), their versions, and what to do about each one missing.

    Exit 0 when the required pieces (a GPU, CuPy, nvcc) are there; optional ones are listed with the
    command that needs them and never fail it. Exit 3 if a required one is missing.
    Example: gpuprof doctor; gpuprof doctor --json -
    """
    from gpuprof.commands.doctor import diagnose
    from gpuprof.files import check_outputs
    from gpuprof.render.doctor_view import doctor_view

    with exit_on_error():
        target = json_target(json_out)
        check_outputs([], {"--json": target}, force)
        checks = diagnose()
        missing = [c.name for c in checks if c.required and not c.ok]
        write_json({"schema": "gpuprof.doctor", "ok": not missing, "checks": checks}, target)
        if str(target) != "-":
            console = human_console(target)
            console.print(doctor_view(checks, console.width))
        if missing:
            raise EnvironmentProblem(f"required for gpuprof run but missing: {', '.join(missing)} (see the table)")
