"""`gpuprof compare`: the CI regression gate over two results files (runs without a GPU)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gpuprof.analysis.compare import PRESETS, compare_files, gate, policy_for
from gpuprof.cli._app import app
from gpuprof.cli._boundary import err_console, exit_on_error
from gpuprof.errors import Finding
from gpuprof.render.compare_view import compare_json, compare_markdown, render_compare_table
from gpuprof.render.console import make_console
from gpuprof.results import atomic_write_text

# Choices come from the presets themselves, so --help and compare.py cannot disagree.
Preset = StrEnum("Preset", {name.upper(): name for name in PRESETS})


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


PresetOpt = Annotated[Preset, typer.Option(help="Thresholds: min effect, alpha, min samples (docs/ci-gate.md).")]
MarkdownOut = Annotated[Path | None, typer.Option(
    "--markdown", help="Also write a Markdown summary here (atomic), e.g. $GITHUB_STEP_SUMMARY.", dir_okay=False)]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="table for people, json for machines.")]
AllowGpu = Annotated[bool, typer.Option("--allow-different-gpu", help="Compare even if the GPU models differ.")]


@app.command()
def compare(
    base: Annotated[Path, typer.Argument(help="Baseline results JSON (e.g. from main).")],
    new: Annotated[Path, typer.Argument(help="Results JSON to judge.")],
    preset: PresetOpt = Preset.DEFAULT,
    markdown: MarkdownOut = None,
    output_format: FormatOpt = OutputFormat.TABLE,
    allow_different_gpu: AllowGpu = False,
) -> None:
    """Compare two results files row by row; exit 1 only on a real regression (SLOWER or newly WRONG).

    Exit codes: 0 no regression (improvements never fail), 1 regression, 2 bad input or different GPUs.
    """
    with exit_on_error():
        report = compare_files(base, new, policy_for(preset.value), allow_different_gpu=allow_different_gpu)
        if markdown is not None:
            atomic_write_text(markdown, compare_markdown(report))
        for warning in report.warnings:
            err_console.print(f"[yellow]warning:[/] {escape(warning)}", markup=True)
        if output_format is OutputFormat.JSON:
            typer.echo(compare_json(report))
        else:
            make_console().print(render_compare_table(report))
        failures = gate(report)
        if failures:
            raise Finding(f"the gate fails on {len(failures)} row(s): " + "; ".join(failures))
