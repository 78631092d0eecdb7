"""The stdout console: the terminal's width (or $COLUMNS where it is a positive number), else 160
columns in logs and pipes (not Rich's 80); never narrower than MIN_WIDTH (COLUMNS=0 or COLUMNS=5
would leave no room for a table: the terminal folds the lines instead)."""

from __future__ import annotations

import errno
import os

from rich.console import Console, RenderableType
from rich.measure import Measurement

PIPE_WIDTH = 160
MIN_WIDTH = 40


def console_width(stderr: bool = False) -> int:
    """$COLUMNS when it is a positive integer, else the terminal's width, else PIPE_WIDTH; at least MIN_WIDTH."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and 0 < int(columns) < 100_000:
        return max(int(columns), MIN_WIDTH)
    try:
        size = os.get_terminal_size(2 if stderr else 1).columns
    except (OSError, ValueError):
        return PIPE_WIDTH
    return max(size, MIN_WIDTH) if size > 0 else PIPE_WIDTH


class PipeConsole(Console):
    """Rich ends the process with exit 1 when the reader closes the pipe (`gpuprof list | true`);
    this raises BrokenPipeError instead, which the CLI ends quietly with exit 0 (cli/_app.py)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def make_console(stderr: bool = False) -> Console:
    """`COLUMNS=100 gpuprof show r.json | less` is laid out for 100 columns; a pipe without COLUMNS for 160."""
    probe = Console(stderr=stderr)
    columns = os.environ.get("COLUMNS", "").strip()
    given = columns.isdigit() and int(columns) > 0
    width = console_width(stderr) if given or not probe.is_terminal else None
    if width is None and probe.width < MIN_WIDTH:
        width = MIN_WIDTH
    return PipeConsole(stderr=stderr, width=width)


def print_whole(console: Console, renderable: RenderableType) -> None:
    """Print at least as wide as the renderable's narrowest layout, so a narrow console folds lines
    rather than Rich cutting cells with '…'."""
    need = Measurement.get(console, console.options, renderable).minimum
    own = console.width
    if need <= own:
        console.print(renderable)
        return
    console.width = need
    try:
        console.print(renderable)
    finally:
        console.width = own
