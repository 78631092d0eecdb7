"""Progress events the cores report while they work; the CLI turns them into a progress bar or lines.

The cores (run, ncu, nsys, sanitize, profile) report through one shape: a ProgressFn called with a
Progress event; suite passes run's events on, each with its case's label (`within`), and suite --gpus
reports each finished unit with its GPU's. A DONE event of run's (and so of suite's) carries what its
unit came to (UnitOutcome): the suite's progress line prints it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

START = "start"  # the core begins the work it counts (before anything that may fail on the way)
DONE = "done"  # the step that says `variant` has finished


@dataclass(frozen=True)
class UnitOutcome:
    """What one finished unit (a variant at one size) came to: the row's id parts, its check status,
    its measured median and its rate (None where it has none: not timed, not OK). Plain values, so
    the cores fill it without the renderer and the renderer formats it without the cores."""

    family: str
    variant: str  # a suite sweep's label included: "warptile[BM=64]"
    size: str  # "4096x4096x4096" (results.size_label)
    status: str  # results' check status: "ok", "wrong", "fault", ...
    median_s: float | None = None
    rate: float | None = None  # FLOP/s or bytes/s, as the row's derived rate
    rate_kind: str = "bytes"  # "flop", "bytes" or "link"
    reason: str = ""  # a row that is not OK: its first reason
    gpu: int | None = None  # suite --gpus: the GPU that ran it

    @property
    def row_id(self) -> str:
        """= results.row_id of its row."""
        return f"{self.family}/{self.variant}/{self.size}"


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
    outcome: UnitOutcome | None = None  # on a DONE event of run's: what the unit came to

    @property
    def finished(self) -> int:
        """How many of `total` are finished once this event is seen."""
        return self.index + (1 if self.step == DONE else 0)


ProgressFn = Callable[[Progress], None]


def tell(progress: ProgressFn | None, variant: str, step: str, index: int, total: int) -> None:
    """Report one event to `progress` (None: nobody is listening)."""
    if progress is not None:
        progress(Progress(variant, step, index, total))
