"""The child that records a Python program under the PyTorch profiler, where nsys is missing.

`python -m gpuprof.tools.torch_child TRACE.json -- script.py ARGS...` (or `-- -m module ARGS...`)
runs the program in this interpreter as `__main__`, with CPU and CUDA activity recorded (CUPTI),
and writes the Chrome trace. The program's own exit code is this process's exit code.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

NO_TORCH_EXIT = 97  # told apart from the program's own codes by the parent (commands/nsys.py)


def main(argv: list[str]) -> int:
    trace, program = Path(argv[0]), argv[argv.index("--") + 1:]
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        print("gpuprof: PyTorch is not installed in this interpreter", file=sys.stderr)
        return NO_TORCH_EXIT
    code: int = 0
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        try:
            if program[0] == "-m":
                sys.argv = [program[1], *program[2:]]
                runpy.run_module(program[1], run_name="__main__", alter_sys=True)
            else:
                sys.argv = list(program)
                sys.path.insert(0, str(Path(program[0]).resolve().parent))
                runpy.run_path(program[0], run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def is_python_command(argv: list[str] | tuple[str, ...]) -> bool:
    """`python[3[.x]] script.py ...` or `python -m module ...`: what the child can run in-process."""
    name = Path(argv[0]).name if argv else ""
    return name.startswith("python") and len(argv) >= 2 and (argv[1] == "-m" or argv[1].endswith(".py"))


def child_argv(argv: list[str] | tuple[str, ...], trace: Path) -> list[str]:
    return [argv[0], "-m", "gpuprof.tools.torch_child", str(trace), "--", *argv[1:]]


def child_env() -> dict[str, str]:
    """The child's interpreter may be another Python: put this gpuprof first on its path."""
    import os

    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
