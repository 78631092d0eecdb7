"""The only place that starts subprocesses: argument lists, a timeout, output captured."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gpuprof.errors import EnvironmentProblem, UsageError


@dataclass(frozen=True)
class Completed:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def find_tool(name: str, explicit: str | Path | None = None, extra_dirs: tuple[Path, ...] = (),
              hint: str = "install the CUDA toolkit or add its bin/ to PATH") -> str:
    """Absolute path of a tool: an explicit path, then PATH, then $CUDA_HOME/bin and extra dirs."""
    if explicit:
        path = Path(explicit)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise UsageError(f"{explicit} is not an executable file")  # a bad flag value (exit 2), not the machine
    found = shutil.which(name)
    if found:
        return found
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    for d in (Path(cuda_home) / "bin", *extra_dirs):
        candidate = d / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise EnvironmentProblem(f"{name} is not on PATH; {hint}")


def run(argv: list[str], *, timeout_s: float, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> Completed:
    """Run argv (never through a shell); a timeout or a missing program is an EnvironmentProblem."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, cwd=cwd,
                              env=env, check=False, errors="replace")
    except FileNotFoundError:
        raise EnvironmentProblem(f"{argv[0]} could not be started: not found") from None
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"{Path(argv[0]).name} did not finish within {timeout_s:.0f} s") from None
    return Completed(list(argv), proc.returncode, proc.stdout, proc.stderr)
