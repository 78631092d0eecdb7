"""The Typer application object that every command module registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="gpuprof",
    help=(
        "Check, time, profile and sanitize CUDA kernel variants.\n\n"
        "Examples:\n\n"
        "  gpuprof list\n\n"
        "  gpuprof run matmul --variants naive,smem_tiled,cublas\n\n"
        "  gpuprof run vecadd --json results.json\n\n"
        "  gpuprof build matmul --arch sm_90\n\n"
        "  gpuprof compare base.json new.json --markdown summary.md"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode="rich",
)
