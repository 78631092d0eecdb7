"""Typer front-end: parse options, call one core function, render; errors and exit codes in _boundary.

Command modules import their cores inside the command, so `gpuprof --help` and `gpuprof list` start
without scipy, CuPy, PyTorch or pandas.
"""

from __future__ import annotations

# Importing a command module registers its commands on `app`.
from gpuprof.cli import compare as _compare  # noqa: F401
from gpuprof.cli import device as _device  # noqa: F401
from gpuprof.cli import kernels as _kernels  # noqa: F401
from gpuprof.cli import merge as _merge  # noqa: F401
from gpuprof.cli import ncu as _ncu  # noqa: F401
from gpuprof.cli import nsys as _nsys  # noqa: F401
from gpuprof.cli import profile as _profile  # noqa: F401
from gpuprof.cli import report as _report  # noqa: F401
from gpuprof.cli import run as _run  # noqa: F401
from gpuprof.cli import sanitize as _sanitize  # noqa: F401
from gpuprof.cli import show as _show  # noqa: F401
from gpuprof.cli._app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
