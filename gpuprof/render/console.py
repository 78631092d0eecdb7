"""The stdout console: full width on a terminal, 160 columns in logs and pipes (not Rich's 80)."""

from __future__ import annotations

from rich.console import Console


def make_console(stderr: bool = False) -> Console:
    probe = Console(stderr=stderr)
    return Console(stderr=stderr, width=None if probe.is_terminal else 160)
