"""`gpuprof merge`: join results files (a suite's shards from several machines) into one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error, warn
from gpuprof.cli._options import Force, JsonOut, json_target
from gpuprof.cli._output import human_console
from gpuprof.errors import UsageError


@app.command()
def merge(
    files: Annotated[list[Path], typer.Argument(
        metavar="RESULTS.json...", help="Results files of disjoint rows, e.g. the shards of one suite.",
        dir_okay=False)],
    json_out: JsonOut = None,
    allow_mixed: Annotated[bool, typer.Option(
        "--allow-mixed", help="Join files from different GPU models, drivers or gpuprof versions (refused otherwise).")
    ] = False,
    force: Force = False,
) -> None:
    """Join results files into one (rows of suite shards back in suite order); refuse mixed machines.

    Examples:

      gpuprof merge part1.json part2.json --json all.json

      gpuprof merge shards/*.json --json all.json && gpuprof compare base.json all.json
    """
    with exit_on_error():
        from gpuprof import results
        from gpuprof.commands.merge import MergeRequest, execute
        from gpuprof.files import check_outputs

        target = json_target(json_out)
        if target is None:
            raise UsageError("give --json FILE (or --json - for stdout) for the merged results")
        check_outputs(files, {"--json": target}, force)
        merged = execute(MergeRequest(tuple(files), allow_mixed))
        if isinstance(target, Path):
            results.save(merged.results, target)
        else:
            typer.echo("".join(results.json_parts(merged.results)))
    for note in merged.notes:
        warn(note)
    parts = merged.results.shard.get("merged", [])
    shards = [p["shard"] for p in parts if "shard" in p]
    console = human_console(target)
    console.print(f"merged {len(parts)} files ({', '.join(shards) if shards else 'no shards'}): "
                  f"{len(merged.results.rows)} rows" + (f" -> {target}" if isinstance(target, Path) else ""),
                  highlight=False)
