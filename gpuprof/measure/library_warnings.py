"""Warnings that libraries (PyTorch, Inductor, CuPy, ...) raise while gpuprof works, caught rather
than printed raw above the tables: each row keeps the ones its own work raised (its "warnings"),
and the renderer says them in gpuprof's words (the TF32 one as a footnote of the rows it affects,
any other once at the end of the run).

A kept warning is {"library": "torch", "category": "UserWarning", "message": "..."}: the library is
the installed package the warning was raised from (its file's folder under site-packages), else the
file's name.
"""

from __future__ import annotations

import contextlib
import re
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import PurePath

# Inductor (torch.compile) on an Ampere or newer GPU, compiling a float32 matmul with TF32 off:
# "TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled. ..."
_TF32_OFF = re.compile(r"TensorFloat32 tensor cores\b.*\bavailable but not enabled", re.IGNORECASE)
_PACKAGE_DIRS = ("site-packages", "dist-packages")


def is_tf32_off(warning: Mapping[str, str]) -> bool:
    """The warning says TF32 tensor cores were available but off (the row's matmuls ran in full FP32)."""
    return bool(_TF32_OFF.search(warning.get("message", "")))


def library_of(filename: str) -> str:
    """'torch' for .../site-packages/torch/_inductor/compile_fx.py; a file outside any installed
    package: its name without the suffix."""
    parts = PurePath(filename).parts
    for index, part in enumerate(parts[:-1]):
        if part in _PACKAGE_DIRS:
            return PurePath(parts[index + 1]).stem
    return PurePath(filename).stem or "?"


@contextlib.contextmanager
def caught() -> Iterator[list[dict[str, str]]]:
    """Catch the warnings raised inside that Python's filters let through (each once, in the order
    first raised) into the list yielded, filled when the block ends; nothing is printed. Filters set
    inside the block still apply (timing.quiet_torch_profiler silences one warning outright)."""
    kept: list[dict[str, str]] = []
    _rearm_inductor_tf32_warning()
    # The filters stay as they are (DeprecationWarnings stay hidden, -W and PYTHONWARNINGS apply);
    # entering the block resets Python's record of warnings already shown, so a row raising one an
    # earlier row raised keeps it too.
    with warnings.catch_warnings(record=True) as records:
        try:
            yield kept
        finally:
            for record in records:
                entry = {"library": library_of(record.filename), "category": record.category.__name__,
                         "message": " ".join(str(record.message).split())}
                if entry not in kept:
                    kept.append(entry)


def _rearm_inductor_tf32_warning() -> None:
    """Inductor raises its TF32 warning once per process (functools.cache around the function that
    warns); a worker process runs many rows, and each one that compiles a float32 matmul with TF32
    off should hear it. Its cache is cleared where that function exists; nothing happens elsewhere."""
    for name in ("torch._inductor.compile_fx", "torch._inductor.fx_passes.fuse_attention"):
        warn_once = getattr(sys.modules.get(name), "_warn_tf32_disabled", None)
        clear = getattr(warn_once, "cache_clear", None)
        if callable(clear):
            clear()
