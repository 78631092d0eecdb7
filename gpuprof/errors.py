"""The error classes the core raises; each carries its exit code (README, "Exit codes and errors")."""

from __future__ import annotations

from pathlib import Path


class GpuprofError(Exception):
    """Base class: a message meant for the user, and the process exit code that goes with it."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Finding(GpuprofError):
    """Something was found: a regression, a sanitizer error, a wrong result (exit 1)."""

    exit_code = 1


class UsageError(GpuprofError):
    """Bad command-line usage: unknown family, variant, option value (exit 2)."""

    exit_code = 2


class InputError(GpuprofError):
    """A bad input file: unreadable, malformed, foreign schema (exit 2)."""

    exit_code = 2


class ParseError(InputError):
    """A tool report or data file that cannot be parsed; names the file and the place."""

    def __init__(self, path: str | Path | None, where: str, why: str) -> None:
        self.path = None if path is None else str(path)
        self.where = where
        self.why = why
        prefix = f"{self.path}: " if self.path else ""
        super().__init__(f"{prefix}{where}: {why}")


class EnvironmentProblem(GpuprofError):
    """The machine cannot do it: no GPU, tool missing, counters not permitted (exit 3)."""

    exit_code = 3


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt (gpuprof/__main__.py installs the
    handler), so it stops the same clean way: children ended, no half-written file, one line."""


class Interrupted(GpuprofError):
    """Ctrl-C: stopped cleanly after saving what was finished (exit 130; 143 for SIGTERM, 128 + its number)."""

    exit_code = 130

    def __init__(self, message: str, terminated: bool = False) -> None:
        super().__init__(message)
        if terminated:
            self.exit_code = TERMINATED_EXIT_CODE


TERMINATED_EXIT_CODE = 143


def stop_word(exc: BaseException) -> str:
    """How an error line names a stop by signal: 'terminated' (SIGTERM) or 'interrupted' (Ctrl-C)."""
    return "terminated" if isinstance(exc, Terminated) else "interrupted"


class ToolFailed(EnvironmentProblem):
    """An external tool (ncu, nsys, compute-sanitizer) reported a failure instead of results (exit 3).

    `kind` names the failure for code that must decide on it (never a substring of the message);
    `message` is the line the user reads.
    """

    kind = "tool_error"

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class CountersNotPermitted(ToolFailed):
    """ERR_NVGPUCTRPERM: the profiler may not read the GPU's performance counters; nothing can be profiled."""

    def __init__(self, said: str = "ERR_NVGPUCTRPERM", tool: str = "ncu") -> None:
        super().__init__(
            "counters_not_permitted",
            f"{tool} may not read the GPU's performance counters (ERR_NVGPUCTRPERM); run as root, or set the "
            "driver option NVreg_RestrictProfilingToAdminUsers=0 (see developer.nvidia.com/ERR_NVGPUCTRPERM)",
        )
        self.said = said


class NoKernelsProfiled(ToolFailed):
    """The profiler ran the program but its filter matched no kernel; lists the kernels it saw, if it printed any."""

    def __init__(self, message: str, available_kernels: tuple[str, ...] | list[str] = ()) -> None:
        self.available_kernels = tuple(available_kernels)
        seen = f" (kernels seen: {', '.join(self.available_kernels[:8])})" if self.available_kernels else ""
        super().__init__("no_kernels_profiled", f"{message}{seen}")
