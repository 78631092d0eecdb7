"""The stdout console: the terminal's width (or $COLUMNS where set), else 160 columns in logs and
pipes (not Rich's 80)."""

from __future__ import annotations

import os

from rich.console import Console


def make_console(stderr: bool = False) -> Console:
    """Rich reads $COLUMNS itself when given no width; a fixed 160 for pipes must not override it
    (`COLUMNS=100 gpuprof show r.json | less` is laid out for 100 columns)."""
    probe = Console(stderr=stderr)
    columns = os.environ.get("COLUMNS", "")
    return Console(stderr=stderr, width=None if probe.is_terminal or columns.isdigit() else 160)
