"""The CLI's error boundary, the one place exit codes are chosen: every error is one stderr line.

A GpuprofError carries its exit code (errors.py); Click's usage errors are UsageError's; Ctrl-C is
Interrupted's. No CLI module writes an exit code as a number.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from rich.console import Console
from rich.markup import escape
from typer import Abort

try:  # Typer >= 0.29 vendors Click as typer._click; older ones use click itself
    from typer._click.exceptions import ClickException, MissingParameter, NoArgsIsHelpError, NoSuchOption
except ImportError:  # pragma: no cover
    from click.exceptions import (  # type: ignore[no-redef]
        ClickException,
        MissingParameter,
        NoArgsIsHelpError,
        NoSuchOption,
    )

from gpuprof.errors import TERMINATED_EXIT_CODE, GpuprofError, Interrupted, Terminated, UsageError, stop_word
from gpuprof.render.safe_text import visible

__all__ = ["ClickException", "NoArgsIsHelpError", "err_console", "exit_code_of", "exit_on_error", "print_error",
           "report", "status", "usage_message", "warn"]


def _columns_or_default() -> int | None:
    """Rich takes $COLUMNS as it is: COLUMNS=0 made every line empty. Only a positive one counts."""
    columns = os.environ.get("COLUMNS", "").strip()
    return None if not columns or (columns.isdigit() and int(columns) > 0) else 160


err_console = Console(stderr=True, highlight=False, soft_wrap=True, width=_columns_or_default())


class _Quiet:
    """A status line where stderr is no terminal (a log, a pipe, CI): nothing, so the error line that
    may follow is the only line (Rich's transient displays leave an empty line there)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Status:
    """Rich's spinner, its text taken as text: file and variant names hold '[' (markup to Rich)."""

    def __init__(self, text: str) -> None:
        self.inner = err_console.status(escape(text), spinner="dots")

    def __enter__(self) -> Self:
        self.inner.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.inner.__exit__(exc_type, exc, traceback)

    def update(self, text: str) -> None:
        self.inner.update(escape(text))


def status(text: str) -> _Status | _Quiet:
    """A spinner with `text` on stderr while work runs, on a terminal only."""
    return _Status(text) if err_console.is_terminal else _Quiet()


def one_line(message: str) -> str:
    """The message on one line, its control and bidi characters written as escapes (file names,
    kernel names and compiler output reach it)."""
    return visible(" ".join(str(message).split()))


def print_error(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(one_line(message))}", markup=True)  # "[[variant]]" stays text


def warn(message: str) -> None:
    err_console.print(f"[yellow]warning:[/] {escape(one_line(message))}", markup=True)


def exit_code_of(exc: BaseException) -> int:
    """The documented exit code of anything the boundary catches."""
    if isinstance(exc, GpuprofError):
        return exc.exit_code
    if isinstance(exc, Terminated):
        return TERMINATED_EXIT_CODE
    if isinstance(exc, (KeyboardInterrupt, Abort)):
        return Interrupted.exit_code
    return UsageError.exit_code  # Click's UsageError and its kin: bad command line


def report(exc: BaseException) -> int:
    """Print `exc` as one error line and return its exit code."""
    if isinstance(exc, GpuprofError):
        print_error(exc.message)
    elif isinstance(exc, (KeyboardInterrupt, Abort)):
        print_error(stopped_message(exc))
    else:
        print_error(usage_message(exc))
    return exit_code_of(exc)


def closest(given: str, possibilities: Sequence[str], keep: float = 0.1, cutoff: float = 0.6) -> list[str]:
    """The names close to `given` (difflib's ratio at least `cutoff`, as Click and get_close_matches
    judge), the nearest first, only those about as near as the nearest: '--variant' gets '--variants',
    not also '--audit' (ratio 0.95 against 0.62)."""
    ranked = sorted(((ratio, p) for p in possibilities
                     if (ratio := difflib.SequenceMatcher(None, given, p).ratio()) >= cutoff),
                    key=lambda rp: (-rp[0], rp[1]))
    return [p for ratio, p in ranked if ratio >= ranked[0][0] - keep][:3] if ranked else []


def stopped_message(exc: BaseException, since: int = 0) -> str:
    """The line for a Ctrl-C or SIGTERM: the files written since WRITTEN held `since` of them (whole
    files only: every write is atomic), or that nothing was saved."""
    from gpuprof.files import WRITTEN

    saved = ", ".join(dict.fromkeys(str(path) for path in WRITTEN[since:]))
    return f"{stop_word(exc)}; " + (f"written before the stop: {saved}" if saved else "nothing was saved")


def usage_message(exc: BaseException) -> str:
    """Click's usage errors in gpuprof's words: 'no such option --variant; did you mean --variants?'."""
    if isinstance(exc, NoSuchOption):
        close = closest(exc.option_name, exc.possibilities or [])
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        return f"no such option {exc.option_name}{hint}"
    message = exc.format_message() if isinstance(exc, ClickException) else str(exc)
    message = message.rstrip(".")
    if message.startswith("No such command"):
        ctx = getattr(exc, "ctx", None)
        name = message.split("'")[1] if "'" in message else ""
        group = ctx.command if ctx is not None and hasattr(ctx.command, "list_commands") else None
        commands = [c for c in group.list_commands(ctx) if not group.get_command(ctx, c).hidden] if group else []
        close = closest(name, commands)
        message = f"No such command '{name}'" + (f"; did you mean {close[0]}?" if close
                                                 else f"; choose from: {', '.join(commands)}")
    elif isinstance(exc, MissingParameter) and exc.ctx is not None:
        message += f" (see {exc.ctx.command_path} --help)"
    return message[:1].lower() + message[1:]


@contextmanager
def exit_on_error(saved: Callable[[], Path | str | None] | None = None) -> Iterator[None]:
    """Ctrl-C inside a command: say truthfully what was saved (`saved()` names it; else the files
    written inside this block, or nothing)."""
    from gpuprof.files import WRITTEN

    since = len(WRITTEN)
    try:
        yield
    except KeyboardInterrupt as exc:
        where = saved() if saved is not None else None
        raise Interrupted(f"{stop_word(exc)}; finished results were saved to {where}" if where
                          else stopped_message(exc, since), terminated=isinstance(exc, Terminated)) from None
