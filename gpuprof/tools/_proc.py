"""The only place that starts subprocesses: argument lists, a timeout, output captured."""

from __future__ import annotations

import os
import shutil
import signal
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


def cuda_home() -> Path:
    """The CUDA toolkit's folder as users point at it: $CUDA_HOME, $CUDA_PATH, else /usr/local/cuda."""
    return Path(os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda")


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
    for d in (cuda_home() / "bin", *extra_dirs):
        candidate = d / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise EnvironmentProblem(f"{name} is not on PATH; {hint}")


def python_child_env() -> dict[str, str]:
    """The environment for `python -m gpuprof....` as a child: this gpuprof's folder first on
    PYTHONPATH, so the child imports the same code whatever its working folder."""
    package_root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}


def run(argv: list[str], *, timeout_s: float, cwd: Path | None = None,
        env: dict[str, str] | None = None, isolated: bool = False) -> Completed:
    """Run argv (never through a shell); a timeout or a missing program is an EnvironmentProblem.
    isolated (compilers): no stdin, and a session of its own that a timeout ends whole, since nvcc's
    steps (cicc, ptxas) outlive nvcc otherwise; a profiled program keeps the terminal's stdin."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL if isolated else None, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=cwd, env=env, errors="replace",
                                start_new_session=isolated)
    except FileNotFoundError:
        raise EnvironmentProblem(f"{argv[0]} could not be started: not found") from None
    except PermissionError:
        raise EnvironmentProblem(f"{argv[0]} could not be started: not executable") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _end(proc, isolated)
        raise EnvironmentProblem(f"{Path(argv[0]).name} did not finish within {timeout_s:.0f} s") from None
    except BaseException:  # Ctrl-C: the group does not outlive gpuprof
        _end(proc, isolated)
        raise
    return Completed(list(argv), proc.returncode, stdout, stderr)


def _end(proc: subprocess.Popen, group: bool) -> None:
    try:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # a grandchild holding the pipes open past SIGKILL: leave it
        pass
