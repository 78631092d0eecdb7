"""CUTLASS's C++ headers for the vendor rows gpuprof builds with nvcc: a CUTLASS checkout named by
CUTLASS_PATH (its include/), else the headers the `nvidia-cutlass` wheel ships inside its
`cutlass_library` package (found without importing it, which would pull in cuda-python)."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from gpuprof.errors import EnvironmentProblem

_HINT = ("the CUTLASS row is built from CUTLASS's headers: pip install 'gpuprof[cutlass]' (the nvidia-cutlass wheel) "
         "or set CUTLASS_PATH to a CUTLASS checkout")


def _candidates() -> list[Path]:
    found = []
    if os.environ.get("CUTLASS_PATH"):
        found.append(Path(os.environ["CUTLASS_PATH"]) / "include")
    try:
        spec = importlib.util.find_spec("cutlass_library")
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        found.append(Path(location) / "source" / "include")
    return found


def cutlass_include() -> Path:
    """The folder holding cutlass/cutlass.h; EnvironmentProblem (exit 3) naming how to get it."""
    for folder in _candidates():
        if (folder / "cutlass" / "cutlass.h").is_file():
            return folder
    raise EnvironmentProblem(_HINT)


def cutlass_version() -> str | None:
    """CUTLASS_MAJOR.MINOR.PATCH from the headers gpuprof would build with; None without them."""
    try:
        header = (cutlass_include() / "cutlass" / "version.h").read_text(errors="replace")
    except (EnvironmentProblem, OSError):
        return None
    parts = [re.search(rf"#define\s+CUTLASS_{name}\s+(\d+)", header) for name in ("MAJOR", "MINOR", "PATCH")]
    if not all(parts):
        return None
    return ".".join(m.group(1) for m in parts if m)
