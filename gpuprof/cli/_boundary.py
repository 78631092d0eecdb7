"""The CLI's error boundary: a GpuprofError becomes one stderr line and its exit code."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from gpuprof.errors import GpuprofError

err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True)  # "[[variant]]" stays text
    return typer.Exit(code=code)


@contextmanager
def exit_on_error() -> Iterator[None]:
    """Turn core errors (and Ctrl-C) into one line on stderr plus the documented exit code."""
    try:
        yield
    except GpuprofError as exc:
        raise fail(_one_line(exc.message), exc.exit_code) from None
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; finished results were saved\n")
        raise typer.Exit(code=130) from None


def _one_line(message: str) -> str:
    return " ".join(message.split())
