"""`gpuprof compare`'s core: load the results files, judge NEW against BASE, write the outputs asked for."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpuprof import results
from gpuprof.analysis.compare import CompareReport, compare_results
from gpuprof.analysis.compare_presets import DEFAULT_FAIL_ON, ComparePolicy, FailOn, policy_for
from gpuprof.errors import UsageError
from gpuprof.files import atomic_write_text
from gpuprof.progress import Progress, ProgressFn

# The text of one output file, made from the report: render/compare_view.py makes the Markdown
# summary and the JSON documents (render is a layer above the cores, so the request carries them).
Rendering = Callable[[CompareReport], str | Iterable[str]]


@dataclass(frozen=True)
class CompareRequest:
    """What `gpuprof compare` was asked.

    bases: BASE files, oldest first; the last is the baseline, all of them together give each row's
    run-to-run spread (history). policy None: the preset the suite wrote into NEW
    (`"compare": {"preset": ...}`), else default. outputs: files written atomically, in this order,
    once NEW is judged, each with the rendering of its text.
    """

    bases: tuple[Path, ...]
    new: Path
    policy: ComparePolicy | None = None
    fail_on: frozenset[FailOn] = DEFAULT_FAIL_ON
    run_shift_limit: float | None = None  # --fail-on run-shift=PCT, as a fraction
    allow_different_gpu: bool = False
    allow_mismatch: bool = False
    outputs: tuple[tuple[Path, Rendering], ...] = ()


def execute(request: CompareRequest, progress: ProgressFn | None = None) -> CompareReport:
    """Load the files (InputError on bad ones), compare them, labelled by their paths, and write the
    outputs. progress hears of each step: 'load' per file, 'compare', 'write' per output."""
    if not request.bases:
        raise UsageError("give at least one BASE results file")
    report = _judge(request, progress)  # the loaded files are freed before the outputs are made
    for index, (path, rendering) in enumerate(request.outputs):
        _tell(progress, str(path), "write", index, len(request.outputs))
        atomic_write_text(path, rendering(report))
    return report


def _judge(request: CompareRequest, progress: ProgressFn | None) -> CompareReport:
    paths = [*request.bases, request.new]
    with _no_gc():
        loaded = []
        for index, path in enumerate(paths):
            _tell(progress, str(path), "load", index, len(paths))
            loaded.append(results.load(path, lean=True))  # only what a verdict needs
        *bases, new = loaded
        _tell(progress, str(request.new), "compare", 0, 1)
        return compare_results(
            bases[-1], new, request.policy or policy_for(str(new.compare.get("preset") or "default")),
            allow_different_gpu=request.allow_different_gpu, allow_mismatch=request.allow_mismatch,
            fail_on=request.fail_on, history=bases[:-1], base_label=str(request.bases[-1]),
            new_label=str(request.new), run_shift_limit=request.run_shift_limit,
        )


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic collector off while two files' millions of objects are loaded and compared: they
    form no cycles, and each full collection walks them all again (about a second of an 18k-row
    compare). Reference counting still frees everything."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _tell(progress: ProgressFn | None, label: str, step: str, index: int, total: int) -> None:
    if progress is not None:
        progress(Progress(label, step, index, total))
