"""compute-sanitizer: argument lists and runs, one tool and one child process at a time."""

from __future__ import annotations

import os
from pathlib import Path

from gpuprof.tools import _proc

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# compute-sanitizer exits 0 on findings unless told otherwise (TOOLS.md 3.4); any value we pick is ours.
FINDINGS_EXIT_CODE = 86
RUN_TIMEOUT_S = 600.0


def find_sanitizer(explicit: str | Path | None = None) -> str:
    return _proc.find_tool("compute-sanitizer", explicit, hint="install the CUDA toolkit or pass --sanitizer PATH")


def sanitizer_argv(sanitizer: str, tool: str, target: list[str], leak_check: bool = False) -> list[str]:
    # Device backtraces only: the host frames of a Python program are dozens of interpreter lines.
    argv = [sanitizer, "--tool", tool, "--error-exitcode", str(FINDINGS_EXIT_CODE), "--print-limit", "0",
            "--show-backtrace", "device"]
    if tool == "memcheck" and leak_check:
        # Off by default: PyTorch and cuBLAS keep workspaces until the context dies, which
        # memcheck reports as leaks of a Python process (seen on the H100 for every torch variant).
        argv += ["--leak-check", "full"]
    if tool == "racecheck":
        argv += ["--racecheck-report", "hazard"]
    return argv + target


def child_env() -> dict[str, str]:
    """Plain allocations for every library in the child: pools hide out-of-bounds accesses."""
    return {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}


def run_tool(argv: list[str], log: Path, timeout_s: float = RUN_TIMEOUT_S) -> tuple[int, str]:
    done = _proc.run(argv, timeout_s=timeout_s, env=child_env())
    text = done.stdout + done.stderr
    log.write_text(text)
    return done.returncode, text
