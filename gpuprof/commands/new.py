"""`gpuprof new`'s core: a starter .cu for a student's own variant of a family."""

from __future__ import annotations

from pathlib import Path

from gpuprof.errors import InputError, UsageError
from gpuprof.variants.catalog import Family

TEMPLATE = """// {family} / {name}
// What this variant does, in one or two lines.
// What changed from the variant it starts from ({baseline}?), and why it should be faster.
// Expected limiter (memory bandwidth? FMA throughput? latency?) and what ncu should show.
//
// {summary}. The launch: one thread block per tile of output; gpuprof launches it with
// --block/--tile (default: {baseline}'s block {block}, tile {tile} along {grid_dims}).
// Until the body writes every output, `gpuprof run` reports it WRONG ("not written").
{includes}
extern "C" __global__ void {kernel}({signature}) {{
    // your code here
}}
"""


def starter_text(family: Family, name: str) -> str:
    base = family.variant(family.baseline)
    return TEMPLATE.format(
        family=family.name, name=name, baseline=family.baseline, summary=family.summary,
        block=list(base.block_dims()[:len(base.block)]), tile=list(base.tile_dims()) or base.grid,
        grid_dims=", ".join(family.grid_dims), kernel=f"{family.name}_{name}", signature=family.signature,
        includes="".join(f"#include <{header}>\n" for word, header in TYPE_HEADERS.items() if word in family.signature),
    )


# The header that declares a type a family's signature may use (NVRTC and nvcc include neither by default).
TYPE_HEADERS = {"__nv_bfloat16": "cuda_bf16.h", "__half": "cuda_fp16.h"}


MAX_NAME = 64  # a variant name is a table cell and a file name, not an essay


def write_starter(family: Family, name: str, directory: Path) -> Path:
    if not name.isidentifier() or len(name) > MAX_NAME:
        raise UsageError(
            f"'{name[:40]}' cannot name a variant: use up to {MAX_NAME} letters, digits and _ (e.g. my_tiled)")
    if name in family.variant_names:
        raise UsageError(f"{family.name} already has a variant '{name}'; choose another name")
    if not directory.is_dir():
        raise UsageError(f"--dir {directory}: no such directory")
    path = directory / f"{name}.cu"
    try:
        with path.open("x", encoding="utf-8") as handle:  # "x": never over an existing file
            handle.write(starter_text(family, name))
    except FileExistsError:
        raise UsageError(f"{path} exists already; gpuprof new never overwrites a file") from None
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
