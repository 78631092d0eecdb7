"""`gpuprof compare`: the CI regression gate over results files (runs without a GPU)."""

from __future__ import annotations

import itertools
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error, status, warn
from gpuprof.cli._options import Force, JsonOut, file_only, json_target
from gpuprof.cli._output import human_console
from gpuprof.errors import Finding, UsageError

# Beyond this many rows the terminal table shows only the rows that changed, at most this many of them.
LARGE_REPORT_ROWS = 200


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


# A plain string, checked by policy_for: the choices live with the presets (importing them for
# --help would import scipy).
PresetOpt = Annotated[str | None, typer.Option(
    help="Thresholds: min effect, alpha, min samples; e.g. default or strict (docs/ci-gate.md). Default: the "
         "preset the suite wrote into NEW (compare = { preset = ... }), else default.")]
MarkdownOut = Annotated[Path | None, typer.Option(
    "--markdown", help="Also write a Markdown summary here (atomic), e.g. $GITHUB_STEP_SUMMARY.", dir_okay=False)]
FormatOpt = Annotated[OutputFormat, typer.Option(
    "--format", help="table for people, json for machines (same as --json -).")]
AllowGpu = Annotated[bool, typer.Option("--allow-different-gpu", help="Compare even if the GPU models differ.")]
AllowMismatch = Annotated[bool, typer.Option(
    "--allow-mismatch", help="Compare rows timed in different modes or sizes under one id (refused otherwise).")]
FailOnOpt = Annotated[str | None, typer.Option(
    "--fail-on", metavar="WHAT,...",
    help="Also fail on: inconclusive, missing (removed, resized, skipped rows), control (a control row that moved "
         "alone), run-shift=PCT (the whole run, or a resource class, more than PCT % slower); rows untimed in NEW or "
         "with too few samples fail by default ('none' clears that).")]
BaseOpt = Annotated[list[Path] | None, typer.Option(
    "--base", help="A BASE results file; repeat for history (oldest first, the last is the baseline).",
    dir_okay=False)]
GabOut = Annotated[Path | None, typer.Option(
    "--export-gab", help="Write NEW's medians for github-action-benchmark (customSmallerIsBetter JSON).",
    dir_okay=False)]


@app.command()
def compare(
    files: Annotated[list[Path], typer.Argument(
        metavar="BASE... NEW",
        help="Results JSON files: one or more baselines (oldest first), then the one to judge.")],
    base: BaseOpt = None,
    preset: PresetOpt = None,
    fail_on: FailOnOpt = None,
    markdown: MarkdownOut = None,
    export_gab: GabOut = None,
    json_out: JsonOut = None,
    output_format: FormatOpt = OutputFormat.TABLE,
    allow_different_gpu: AllowGpu = False,
    allow_mismatch: AllowMismatch = False,
    force: Force = False,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Every column of the table, whatever the terminal width.")] = False,
) -> None:
    """Compare results files row by row, relative to the run's common shift when it has control rows.

    Each row is judged relative to the shift of its resource class (compute, DRAM, L2, host link),
    estimated from that class's control rows; a control that moved alone is reported by name.

    Exit codes: 0 no regression (improvements never fail), 1 regression (SLOWER, newly WRONG, untimed
    in NEW, too few samples, or what --fail-on adds), 2 bad input (non-finite, zero or negative
    samples too), mismatched rows or different GPU models.

    Examples:

      gpuprof compare base.json new.json

      gpuprof compare run1.json run2.json run3.json new.json --markdown summary.md

      gpuprof compare a.json b.json --json -

      gpuprof compare base.json new.json --fail-on run-shift=3
    """
    with exit_on_error():
        from gpuprof.analysis.compare import file_problems, gate
        from gpuprof.analysis.compare_presets import parse_fail_on, policy_for, run_shift_limit
        from gpuprof.commands.compare import CompareRequest, execute
        from gpuprof.files import MARKDOWN_MARK, check_outputs
        from gpuprof.render.compare_view import (
            compare_json,
            compare_json_parts,
            compare_markdown,
            gab_json,
            render_compare_table,
        )
        from gpuprof.render.fit import print_table

        bases, new = _split(files, base)
        chosen = policy_for(preset) if preset is not None else None  # None: NEW's suite preset
        fail_rule = parse_fail_on(fail_on)
        if output_format is OutputFormat.JSON:
            if json_out not in (None, "-"):
                raise UsageError("--format json prints to stdout; with --json FILE leave --format out")
            json_out = "-"
        target = json_target(json_out)
        file_only("--markdown", markdown)
        file_only("--export-gab", export_gab)
        check_outputs([*bases, new], {"--markdown": markdown, "--export-gab": export_gab, "--json": target}, force)
        json_file = Path(target) if target not in (None, "-") else None
        outputs = ((markdown, lambda report: compare_markdown(report).rstrip("\n") + "\n" + MARKDOWN_MARK),
                   (export_gab, gab_json),
                   (json_file, lambda report: itertools.chain(compare_json_parts(report), ["\n"])))
        request = CompareRequest(
            tuple(bases), new, chosen, fail_rule, run_shift_limit=run_shift_limit(fail_on),
            allow_different_gpu=allow_different_gpu,
            allow_mismatch=allow_mismatch, outputs=tuple((path, text) for path, text in outputs if path is not None))
        with status(f"comparing {', '.join(map(str, bases))} with {new}"):
            report = execute(request)
        for warning in report.warnings:
            warn(warning)
        if str(target) == "-":
            typer.echo(compare_json(report))
        else:
            big = len(report.verdicts) > LARGE_REPORT_ROWS
            console = human_console(target)
            table = render_compare_table(report, hide_same=big, width=None if wide else console.width,
                                         max_rows=LARGE_REPORT_ROWS if big else None)
            print_table(console, table, wide)
        failures = gate(report)
    if failures:
        raise Finding(_gate_message(failures, len(file_problems(report))))


# The error line names this many failing rows; the table, --json and --markdown list every one.
MESSAGE_ROWS = 10


def _gate_message(failures: list[str], whole: int) -> str:
    """One line: NEW's problems as a whole first (they are not rows), then the failing rows (the
    first MESSAGE_ROWS: 186 failing rows of an 18k-row compare made a 30 kB line)."""
    rows = failures[whole:]
    more = f"and {len(rows) - MESSAGE_ROWS} more (the table, --json and --markdown list them all)"
    named = rows[:MESSAGE_ROWS] + ([more] if len(rows) > MESSAGE_ROWS else [])
    parts = failures[:whole] + ([f"{len(rows)} row(s): " + "; ".join(named)] if rows else [])
    return ("the gate fails: " if whole else f"the gate fails on {len(rows)} row(s): ") + "; ".join(
        parts if whole else named)


def _split(files: list[Path], base: list[Path] | None) -> tuple[list[Path], Path]:
    """(BASE files oldest first, NEW) from `BASE... NEW` or `--base B ... NEW`."""
    if base:
        if len(files) != 1:
            raise UsageError("with --base, give exactly one positional file: NEW")
        return list(base), files[0]
    if len(files) < 2:
        raise UsageError("Missing argument 'NEW': give BASE and NEW results files (BASE... NEW, or --base BASE NEW)")
    return files[:-1], files[-1]
