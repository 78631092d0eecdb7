"""`gpuprof list`'s table per family: each variant, its technique (free text, wrapped at spaces)
and its launch (one fact a line, so the column stays narrow); names are never cut."""

from __future__ import annotations

from rich.table import Table

from gpuprof.render.fit import Column, fitted_table
from gpuprof.results import size_label
from gpuprof.variants.catalog import Family, Variant


def launch_lines(v: Variant) -> list[str]:
    """How the variant runs: 'library', 'Triton JIT' and its file, or its block; its size cap."""
    if v.vendor:
        lines = ["library"]
    elif v.is_python:
        shown = v.file.name if v.file else "?"
        lines = ["Triton JIT" if v.is_triton else f"Python {v.entry}()", f"({shown})"]
    else:
        lines = [f"block {'x'.join(map(str, v.block_dims()[:len(v.block)]))}"]
    if v.max_size:
        lines.append(f"size cap {size_label(v.max_size)}")
    return lines


def family_table(fam: Family, width: int | None) -> Table:
    columns = [Column("variant", justify="left"), Column("technique", justify="left", wrap=True),
               Column("launch", justify="left")]
    rows = []
    for v in fam.variants:
        rows.append([v.name + (" (vendor)" if v.vendor else ""), v.technique, "\n".join(launch_lines(v))])
    # the baseline is named in the title, not marked in its row: the variant column stays narrow
    title = f"{fam.name}: {fam.summary}  (default size {size_label(fam.default_size)}; baseline {fam.baseline})"
    return fitted_table(columns, rows, width, title=title)
