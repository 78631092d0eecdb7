"""`gpuprof compare`: the CI regression gate over two results files (runs without a GPU)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gpuprof.cli._app import app
from gpuprof.cli._boundary import err_console, exit_on_error, warn
from gpuprof.cli._options import Force, JsonOut, json_target
from gpuprof.cli._output import human_console
from gpuprof.errors import Finding, UsageError

# Beyond this many rows the terminal table shows only the rows that changed.
LARGE_REPORT_ROWS = 200


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


# A plain string, checked by policy_for: the choices live with the presets (importing them for
# --help would import scipy).
PresetOpt = Annotated[str, typer.Option(help="Thresholds: min effect, alpha, min samples; e.g. default or strict (docs/ci-gate.md).")]
MarkdownOut = Annotated[Path | None, typer.Option(
    "--markdown", help="Also write a Markdown summary here (atomic), e.g. $GITHUB_STEP_SUMMARY.", dir_okay=False)]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="table for people, json for machines (same as --json -).")]
AllowGpu = Annotated[bool, typer.Option("--allow-different-gpu", help="Compare even if the GPU models differ.")]


@app.command()
def compare(
    base: Annotated[Path, typer.Argument(help="Baseline results JSON (e.g. from main).")],
    new: Annotated[Path, typer.Argument(help="Results JSON to judge.")],
    preset: PresetOpt = "default",
    markdown: MarkdownOut = None,
    json_out: JsonOut = None,
    output_format: FormatOpt = OutputFormat.TABLE,
    allow_different_gpu: AllowGpu = False,
    force: Force = False,
) -> None:
    """Compare two results files row by row; exit 1 only on a real regression (SLOWER or newly WRONG).

    Exit codes: 0 no regression (improvements never fail), 1 regression, 2 bad input or different GPUs.
    Examples: gpuprof compare base.json new.json --markdown summary.md; gpuprof compare a.json b.json --json -
    """
    with exit_on_error():
        from gpuprof.analysis.compare import compare_files, gate, policy_for
        from gpuprof.files import check_outputs
        from gpuprof.render.compare_view import compare_json, compare_markdown, render_compare_table
        from gpuprof.results import atomic_write_text

        policy = policy_for(preset)
        if output_format is OutputFormat.JSON:
            if json_out not in (None, "-"):
                raise UsageError("--format json prints to stdout; with --json FILE leave --format out")
            json_out = "-"
        target = json_target(json_out)
        check_outputs([base, new], {"--markdown": markdown, "--json": target}, force)
        with err_console.status(f"comparing {base} with {new}", spinner="dots"):
            report = compare_files(base, new, policy, allow_different_gpu=allow_different_gpu)
        if markdown is not None:
            atomic_write_text(markdown, compare_markdown(report))
        for warning in report.warnings:
            warn(warning)
        if target is not None:
            if str(target) == "-":
                typer.echo(compare_json(report))
            else:
                atomic_write_text(Path(target), compare_json(report) + "\n")
        if str(target) != "-":
            big = len(report.verdicts) > LARGE_REPORT_ROWS
            human_console(target).print(render_compare_table(report, hide_same=big))
        failures = gate(report)
    if failures:
        raise Finding(f"the gate fails on {len(failures)} row(s): " + "; ".join(failures))
