"""`gpuprof suite`'s progress on stderr: one line per finished unit (render/suite_progress.py); on a
terminal a live bar under them names the unit and step in progress. In a log or pipe (CI) the lines
alone, plain, one line each; on a terminal a long line folds, nothing cut; --quiet: nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.markup import escape

from gpuprof.cli._boundary import err_console

if TYPE_CHECKING:
    from types import TracebackType

    from gpuprof.progress import Progress, ProgressFn


class suite_progress:
    """with suite_progress(quiet, expected_s) as on_step: ... run the suite with on_step ..."""

    def __init__(self, quiet: bool = False, expected_s: Mapping[str, float] | None = None) -> None:
        from gpuprof.render.suite_progress import UnitLines

        self.quiet = quiet
        self.live = err_console.is_terminal and not quiet
        self.lines = UnitLines(expected_s, width=err_console.width if self.live else None)
        self.bar = None
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self.bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                    TimeElapsedColumn(), console=err_console, transient=True)

    def __enter__(self) -> ProgressFn:
        if self.quiet:
            return lambda step: None
        if self.bar is not None:
            self.bar.__enter__()
            self.task = self.bar.add_task("starting", total=None)
        return self.on_step

    def on_step(self, step: Progress) -> None:
        line = self.lines(step)
        if line is not None:
            err_console.print(line, markup=False, highlight=False)  # above the live bar, if there is one
        if self.bar is None:
            return
        about = f"{step.within} {step.variant}" if step.within else step.variant
        self.bar.update(self.task, description=escape(f"{about}: {step.step}"))
        if line is not None:  # a unit's DONE: the count is of the suite's units
            self.bar.update(self.task, completed=step.finished, total=step.total)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self.bar is not None:
            self.bar.__exit__(exc_type, exc, traceback)
