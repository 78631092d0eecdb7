"""`gpuprof suite`'s progress line: one plain line per finished unit, for a terminal or a CI log.

    [12/48  0:41 ETA  1:52] matmul warptile 4096x4096x4096  OK  2.931 ms  46.92 TFLOP/s

The count is of the suite's units (one variant at one size), the times are the suite's elapsed
wall time and the time it expects is left. The ETA scales the elapsed time by the work left: by
unit count (the mean unit so far) or, given each unit's expected seconds (recorded in a --history
file, suite_plan.estimate_units), by those, so a suite whose slow units come first (--gpus hands
out the longest first) does not promise too much too early. The median and rate are the row's own
(the run core's DONE event carries them, progress.UnitOutcome).
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable, Mapping

from gpuprof.progress import DONE, Progress, UnitOutcome
from gpuprof.render import units


def clock_text(seconds: float) -> str:
    """'0:41', '12:05', '1:02:03': minutes and seconds, hours when there are any."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def outcome_text(outcome: UnitOutcome) -> str:
    """'matmul warptile 4096x4096x4096  OK  2.931 ms  46.92 TFLOP/s'; a row that is not OK: its
    status and first reason; suite --gpus: the GPU first."""
    parts = [f"{outcome.family} {outcome.variant} {outcome.size}", outcome.status.upper()]
    if outcome.median_s is not None:
        parts.append(units.seconds(outcome.median_s))
    if outcome.rate is not None:
        parts.append(units.rate(outcome.rate, "flop" if outcome.rate_kind == "flop" else "bytes"))
    if outcome.reason:
        parts.append(" ".join(outcome.reason.split()))
    text = "  ".join(parts)
    return f"GPU {outcome.gpu}  {text}" if outcome.gpu is not None else text


class UnitLines:
    """Progress events in, the line of each finished unit out (None for every other event).

    expected_s: row id -> the unit's expected seconds, for every unit of the suite (else the ETA is
    the mean unit so far times the units left); width: a longer line folds at spaces onto lines
    indented under its unit, nothing cut (None: one line however long, for a log); clock:
    time.monotonic, or a test's."""

    def __init__(self, expected_s: Mapping[str, float] | None = None, width: int | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self.expected = dict(expected_s or {})
        self.width = width
        self.clock = clock or time.monotonic
        self.began = self.clock()
        self.expected_done = 0.0

    def __call__(self, event: Progress) -> str | None:
        if event.step != DONE or event.outcome is None:
            return None
        elapsed = self.clock() - self.began
        finished, total = event.finished, max(event.total, event.finished)
        eta = self._left(elapsed, finished, total, event.outcome.row_id)
        digits = len(str(total))
        head = f"[{finished:>{digits}}/{total} {clock_text(elapsed):>5} ETA {clock_text(eta):>5}]"
        return self._fold(head, outcome_text(event.outcome))

    def _left(self, elapsed: float, finished: int, total: int, row_id: str) -> float:
        """Seconds the suite expects to run on, after `finished` of `total` units in `elapsed`."""
        if finished >= total or finished <= 0:
            return 0.0
        if self.expected:
            mean = sum(self.expected.values()) / len(self.expected)
            self.expected_done += self.expected.get(row_id, mean)  # a unit the estimates lack: a mean one
            left = max(sum(self.expected.values()) - self.expected_done, 0.0)
            if self.expected_done > 0:
                return elapsed * left / self.expected_done
        return elapsed / finished * (total - finished)

    def _fold(self, head: str, text: str) -> str:
        line = f"{head} {text}"
        if self.width is None or len(line) <= self.width:
            return line
        indent = " " * (len(head) + 1)
        return "\n".join(textwrap.wrap(line, self.width, subsequent_indent=indent, break_long_words=False,
                                        break_on_hyphens=False))
