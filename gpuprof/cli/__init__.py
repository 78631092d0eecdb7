"""Typer front-end: parse options, call one core function, render, map errors to exit codes."""

from __future__ import annotations

from gpuprof.cli import compare as _compare  # noqa: E402,F401
from gpuprof.cli import device as _device  # noqa: E402,F401

# Importing a command module registers its commands on `app`.
from gpuprof.cli import kernels as _kernels  # noqa: E402,F401
from gpuprof.cli import ncu as _ncu  # noqa: E402,F401
from gpuprof.cli import nsys as _nsys  # noqa: E402,F401
from gpuprof.cli import profile as _profile  # noqa: E402,F401
from gpuprof.cli import run as _run  # noqa: E402,F401
from gpuprof.cli import sanitize as _sanitize  # noqa: E402,F401
from gpuprof.cli import show as _show  # noqa: E402,F401
from gpuprof.cli._app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
