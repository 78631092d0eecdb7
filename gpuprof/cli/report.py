"""`gpuprof report`: a results file as one self-contained HTML page (and PNG charts)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpuprof.cli._app import app
from gpuprof.cli._boundary import err_console, exit_on_error
from gpuprof.cli._options import Force, file_only
from gpuprof.errors import EnvironmentProblem, UsageError


@app.command()
def report(
    results_file: Annotated[Path, typer.Argument(
        metavar="RESULTS.json", help="A results file from run, suite or merge.", dir_okay=False)],
    html_out: Annotated[Path | None, typer.Option(
        "--html", metavar="FILE", dir_okay=False,
        help="Write the page here: contents and headline, per family the ladders (each step explained), the rows "
             "(check, time and spread, ncu's why, the sanitizer's verdict; stalls, hot lines and findings on "
             "demand), the roofline, sizes and sweeps; one file, nothing fetched when it is opened.")] = None,
    base: Annotated[Path | None, typer.Option(
        "--base", metavar="BASE.json", dir_okay=False,
        help="An earlier results file: the page adds the compare gate's verdict per row and the trend.")] = None,
    png: Annotated[Path | None, typer.Option(
        "--png", metavar="DIR", file_okay=False,
        help="Also write each chart as a PNG into DIR (a ladder per table, a roofline per family, a chart "
             "per sweep), for a README or slides.")] = None,
    force: Force = False,
) -> None:
    """One page for a whole run: ladders, rooflines, per-row check/time/counters/sanitizer, best rungs vs vendor.

    Examples:

      gpuprof report course.json --html course.html

      gpuprof report new.json --base main.json --html report.html --png charts/
    """
    with exit_on_error():
        from gpuprof.commands.report import ReportRequest, execute
        from gpuprof.files import atomic_write_text, check_outputs
        from gpuprof.render import charts
        from gpuprof.render.report_html import page, save_pngs

        if html_out is None and png is None:
            raise UsageError("give --html FILE for the page, or --png DIR for the charts (or both)")
        file_only("--html", html_out)
        file_only("--png", png)
        check_outputs([results_file, base], {"--html": html_out}, force)
        if png is not None and not charts.available():  # before any folder is made
            raise EnvironmentProblem("--png needs matplotlib: pip install 'gpuprof[plot]' (--html works without it)")
        if png is not None:
            png_folder(png)
        with err_console.status(f"reading {results_file}", spinner="dots"):
            story = execute(ReportRequest(results_file, base))
        written: list[Path] = []
        with err_console.status("drawing the charts", spinner="dots"):
            if html_out is not None:
                written.append(atomic_write_text(html_out, page(story)))
            if png is not None:
                written += save_pngs(story, png, force)
    for path in written:
        typer.echo(f"wrote {path}")


def png_folder(png: Path) -> None:
    """--png DIR: an existing folder, or a new one made in an existing folder; anything else is one line."""
    import os
    import stat

    from gpuprof.files import check_output

    try:
        folder = stat.S_ISDIR(os.stat(png).st_mode)
    except (OSError, ValueError):
        folder = False  # missing, a dangling link, a loop, a name too long: check_output says which
    if folder:
        if not os.access(png, os.W_OK | os.X_OK):
            raise UsageError(f"--png {png}: directory is not writable")
        return
    check_output(png, "--png")  # a link, a file, a device, a name too long, a missing or read-only parent
    try:
        png.mkdir()
    except OSError as exc:
        from gpuprof.files import write_failed

        raise write_failed(png, exc) from None
