"""Progress events the cores report while they work; the CLI turns them into a progress bar."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """What the core reports while it works; the CLI turns it into a progress bar."""

    variant: str
    step: str  # "compile" | "check" | "time" | "verify" | "done"
    index: int
    total: int


ProgressFn = Callable[[Progress], None]
