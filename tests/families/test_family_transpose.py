"""transpose's host module (byte counts, tolerance) and its kernels under other -D values. No GPU."""

from __future__ import annotations

import pytest

from gpuprof.families import transpose
from gpuprof.variants import catalog


def test_bytes_are_one_read_and_one_write_of_the_matrix():
    assert transpose.bytes_moved({"rows": 8192, "cols": 8192}) == 2 * 4 * 8192 * 8192  # 512 MiB
    assert transpose.bytes_moved({"rows": 33, "cols": 4097}) == 2 * 4 * 33 * 4097
    assert transpose.flop({"rows": 8192, "cols": 8192}) == 0.0


def test_a_transpose_must_be_exact():
    fam = catalog.load_family("transpose")
    for size in (*fam.check_sizes, fam.default_size):
        assert transpose.tolerance(fam.variant("vectorized"), size) == 0.0


def test_grid_tiles_cover_every_check_size():
    """ceil(extent / tile) blocks along (cols, rows) reach the last element of each check size."""
    fam = catalog.load_family("transpose")
    for v in fam.variants:
        if v.vendor:
            continue
        tile_c, tile_r = v.tile_dims()
        for size in fam.check_sizes:
            blocks_c, blocks_r = -(-size["cols"] // tile_c), -(-size["rows"] // tile_r)
            assert blocks_c * tile_c >= size["cols"] and blocks_r * tile_r >= size["rows"]
            assert blocks_r <= 65535, "grid.y limit"


ALTERNATIVES = [
    ("naive", {"TILE": 16}),
    ("smem_tiled", {"TILE": 16}),
    ("smem_padded", {"TILE": 16}),
    ("multi_element", {"TILE": 32, "BLOCK_ROWS": 4}),
    ("multi_element", {"TILE": 64, "BLOCK_ROWS": 4}),
    ("vectorized", {"TILE": 32, "BLOCK_ROWS": 8}),
    ("vectorized", {"TILE": 64, "BLOCK_ROWS": 8}),
    ("vectorized", {"TILE": 96, "BLOCK_ROWS": 8}),
    ("pipelined", {"TILES": 2}),
    ("pipelined", {"SWIZZLE": 0}),
    ("pipelined", {"TILES": 4, "BUFFERS": 1}),
    ("pipelined", {"TILES": 8, "MIN_BLOCKS": 0, "LOAD_HINT": 1, "STORE_HINT": 1}),
    ("pipelined", {"BLOCK_ROWS": 8}),
    ("pipelined", {"TILE": 32, "BLOCK_ROWS": 8, "TILES": 4}),
]


@pytest.mark.nvcc
@pytest.mark.parametrize(("name", "defines"), ALTERNATIVES, ids=[f"{n}-{d}" for n, d in ALTERNATIVES])
def test_other_tile_parameters_compile_without_spills(build_clean, name, defines):
    build_clean("transpose", name, defines)
