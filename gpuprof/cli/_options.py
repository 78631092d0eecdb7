"""Options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

Variants = Annotated[Optional[str], typer.Option(
    "--variants", "-v", help="Comma list of variants, e.g. naive,smem_tiled,cublas; 'all' (default) for every one.")]
Size = Annotated[Optional[str], typer.Option(
    "--size", "-s", help="Benchmark size: '4096' (every dim), '4096x2048x512', 'm=4096,n=2048,k=512' or '2^28'. Default: the family's.")]
JsonOut = Annotated[Optional[Path], typer.Option(
    "--json", help="Also write the results JSON here (atomic: never a half-written file).", dir_okay=False)]
Arch = Annotated[str, typer.Option("--arch", help="GPU architecture for nvcc, e.g. sm_90.")]
Defines = Annotated[Optional[list[str]], typer.Option(
    "--define", "-D", help="Override a tile parameter for every variant that has it: -D BM=64 (repeatable).")]


def parse_defines(items: list[str] | None) -> dict[str, int]:
    from gpuprof.errors import UsageError

    out: dict[str, int] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"bad --define '{item}': write NAME=INTEGER, e.g. -D BM=64")
        try:
            out[name] = int(value, 0)
        except ValueError:
            raise UsageError(f"bad --define '{item}': {value!r} is not an integer") from None
    return out


class AddOptions:
    """--add FILE[:function] with its launch geometry: a student's variant without editing gpuprof."""

    Add = Annotated[Optional[str], typer.Option(
        "--add", help="Your own variant: a .cu file (and :function if it has several kernels) with the family's signature.")]
    Block = Annotated[Optional[str], typer.Option("--block", help="With --add: threads per block, e.g. 256 or 16,16. Default: the baseline's.")]
    Tile = Annotated[Optional[str], typer.Option("--tile", help="With --add: output elements per block along the family's grid dims, e.g. 16,16. Default: the baseline's.")]
    Grid = Annotated[Optional[str], typer.Option("--grid", help="With --add: 'one' (a single block) or 'per_sm:K' instead of tiles.")]
    KernelsDir = Annotated[Optional[Path], typer.Option(
        "--kernels-dir", help="A folder of your variants: DIR/<family>.toml lists them like kernels/<family>/family.toml does.",
        file_okay=False)]

    @staticmethod
    def spec(add: str | None, block: str | None, tile: str | None, grid: str | None,
             kernels_dir: Path | None = None):
        from dataclasses import replace

        from gpuprof.errors import UsageError
        from gpuprof.variants.user import AddSpec, parse_add

        if add is None:
            if block or tile or grid:
                raise UsageError("--block, --tile and --grid go with --add FILE")
            return AddSpec(None, kernels_dir=kernels_dir) if kernels_dir is not None else None
        return replace(parse_add(add, block, tile, grid), kernels_dir=kernels_dir)
