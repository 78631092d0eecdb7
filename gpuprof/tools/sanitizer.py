"""compute-sanitizer: argument lists and runs, one tool and one child process at a time."""

from __future__ import annotations

import os
from pathlib import Path

from gpuprof.files import atomic_write_text
from gpuprof.tools import _proc

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# compute-sanitizer exits 0 on findings unless told otherwise (docs/tools.md, "compute-sanitizer: exit codes");
# any value we pick is ours.
FINDINGS_EXIT_CODE = 86
RUN_TIMEOUT_S = 600.0


def find_sanitizer(explicit: str | Path | None = None) -> str:
    return _proc.find_tool("compute-sanitizer", explicit, hint="install the CUDA toolkit or pass --sanitizer PATH")


# A sitecustomize.py that turns CuPy's memory pools off in a sanitized Python program (its docstring says why).
SITE_DIR = Path(__file__).resolve().parent / "sanitize_site"


def sanitizer_argv(sanitizer: str, tool: str, target: list[str], leak_check: bool = False) -> list[str]:
    # Device backtraces only: the host frames of a Python program are dozens of interpreter lines.
    argv = [sanitizer, "--tool", tool, "--error-exitcode", str(FINDINGS_EXIT_CODE), "--print-limit", "0",
            "--show-backtrace", "device"]
    if tool == "memcheck" and leak_check:
        # Off by default: PyTorch and cuBLAS keep workspaces until the context dies, which
        # memcheck reports as leaks of a Python process (seen on the H100 for every torch variant).
        argv += ["--leak-check", "full"]
    if tool == "racecheck":
        # One record per pair of racing source lines, with its hazard count: the 'hazard' report
        # prints every conflicting thread pair (1024 records for one race) and hits the hazard cap.
        argv += ["--racecheck-report", "analysis"]
    return argv + target


def child_env(cupy_cache_dir: Path | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """Plain allocations for every library in the child: pools hide out-of-bounds accesses.

    With `cupy_cache_dir` (a user's program): CuPy compiles into that fresh folder with line info and
    keeps each kernel's source beside its cubin, so NVRTC's hashed file names can be mapped back to
    source lines. A cubin already cached elsewhere would be loaded without saving its source.
    """
    env = dict(os.environ if base is None else base)
    env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    # torch.compile compiles in a pool of worker processes; under the tool each would start its own
    # instrumented CUDA process. Compiling in-process checks the same kernels (the workers only
    # compile) without that cost. A value the user set is kept.
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    env["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), *filter(None, [env.get("PYTHONPATH")])])
    if cupy_cache_dir is not None:
        env.update(CUPY_CACHE_DIR=str(cupy_cache_dir), CUPY_CACHE_SAVE_CUDA_SOURCE="1",
                   CUPY_CUDA_COMPILE_WITH_DEBUG="1")
    return env


def run_tool(argv: list[str], log: Path, timeout_s: float = RUN_TIMEOUT_S,
             env: dict[str, str] | None = None) -> tuple[int, str]:
    done = _proc.run(argv, timeout_s=timeout_s, env=child_env() if env is None else env)
    text = done.stdout + done.stderr
    atomic_write_text(log, text)  # never through a link left in the log folder
    return done.returncode, text
