"""Progress events the cores report while they work; the CLI turns them into a progress bar or lines.

The cores (run, ncu, nsys, sanitize, profile) report through one shape: a ProgressFn called with a
Progress event; suite passes run's events on, each with its case's label (`within`), and suite --gpus
reports each finished unit with its GPU's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

START = "start"  # the core begins the work it counts (before anything that may fail on the way)
DONE = "done"  # the step that says `variant` has finished


@dataclass(frozen=True)
class Progress:
    """One step of a core's work."""

    variant: str  # what the step is about: a variant, a batch of them, a (variant, tool) pair, a program
    step: str  # START; run: "compile" | "check" | "time" | "verify"; nsys: "nsys profile"; ...; DONE when finished
    index: int  # its place (from 0) among the `total` things the core works through
    total: int  # may grow while the core works (sanitize re-runs a batch that was not clean)
    # what the step is part of, as a progress line names it before `variant`: a suite's case
    # ("case 2/5 matmul[BM=64]"), the GPU that ran a suite unit ("GPU 1:"); "" for a single command
    within: str = ""

    @property
    def finished(self) -> int:
        """How many of `total` are finished once this event is seen."""
        return self.index + (1 if self.step == DONE else 0)


ProgressFn = Callable[[Progress], None]


def tell(progress: ProgressFn | None, variant: str, step: str, index: int, total: int) -> None:
    """Report one event to `progress` (None: nobody is listening)."""
    if progress is not None:
        progress(Progress(variant, step, index, total))
