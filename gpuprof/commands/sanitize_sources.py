"""Where a sanitizer finding's `file:line` really is, and the text of that line.

compute-sanitizer prints the file name the compiler recorded, without its folder. For gpuprof's
own kernels that is the .cu file (NVRTC is given a `#line` directive); for a CuPy kernel in a
user's program it is NVRTC's hashed name (`<sha1>.cubin.cu`), whose source CuPy saves in its
cache folder when asked (CUPY_CACHE_SAVE_CUDA_SOURCE=1). When that source is a string in one of
the program's own .py files, the line is found there too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# CuPy's cache key is a SHA-1 hex digest; NVRTC sees '<digest>.cubin.cu' (or .ltoir.cu).
NVRTC_HASHED = re.compile(r"[0-9a-f]{32,64}\.(?:cubin|ltoir)\.cu")


@dataclass(frozen=True)
class SourceLine:
    """A finding's place as the user should read it."""

    file: str  # a path to open: relative to the working folder where it lies under it
    line: int
    text: str | None  # the source line, stripped; None where the file could not be found
    compiled_as: str | None = None  # NVRTC's hashed name, when the place was mapped from it


class SourceFinder:
    """Looks a printed file name up in the folders a run's kernels came from, in order."""

    def __init__(self, search_dirs: list[Path], scripts: list[Path] | None = None, cwd: Path | None = None) -> None:
        self.search_dirs = [d for d in search_dirs if d is not None]
        self.scripts = [s for s in scripts or [] if s.is_file()]
        self.cwd = (cwd or Path.cwd()).resolve()
        self._lines: dict[Path, list[str] | None] = {}

    def locate(self, file: str | None, line: int | None) -> SourceLine | None:
        if not file or line is None:
            return None
        path = self._find(file)
        if path is None:
            return SourceLine(file, line, None)
        text = self._line(path, line)
        hashed = Path(file).name if NVRTC_HASHED.fullmatch(Path(file).name) else None
        if hashed and text:
            in_script = self._in_scripts(text)
            if in_script is not None:
                return SourceLine(in_script[0], in_script[1], text, compiled_as=f"{hashed}:{line}")
        return SourceLine(self._shown(path), line, text, compiled_as=f"{hashed}:{line}" if hashed else None)

    def _find(self, file: str) -> Path | None:
        given = Path(file)
        if given.is_absolute() and given.is_file():
            return given
        # The path as printed anywhere first, then its bare name (compute-sanitizer strips folders).
        for candidate in [d / given for d in self.search_dirs] + [d / given.name for d in self.search_dirs]:
            if candidate.is_file():
                return candidate
        return None

    def _read(self, path: Path) -> list[str] | None:
        if path not in self._lines:
            try:
                self._lines[path] = path.read_text(errors="replace").splitlines()
            except OSError:
                self._lines[path] = None
        return self._lines[path]

    def _line(self, path: Path, line: int) -> str | None:
        lines = self._read(path)
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1].strip() or None

    def _in_scripts(self, text: str) -> tuple[str, int] | None:
        """The one line of the program's .py files that reads `text` (the kernel source is a
        string there); None if no line or several do."""
        hits = [(script, n) for script in self.scripts for n, ln in enumerate(self._read(script) or [], 1)
                if ln.strip() == text]
        if len(hits) != 1:
            return None
        return self._shown(hits[0][0]), hits[0][1]

    def _shown(self, path: Path) -> str:
        resolved = path.resolve()
        try:
            return str(resolved.relative_to(self.cwd))
        except ValueError:
            return str(resolved)


def python_scripts(command: list[str]) -> list[Path]:
    """The .py files a command names (`python prog.py`, `pytest tests/test_x.py`)."""
    return [Path(arg) for arg in command if arg.endswith(".py") and Path(arg).is_file()]
