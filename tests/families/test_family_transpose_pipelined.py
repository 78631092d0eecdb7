"""transpose/pipelined on the CPU: its index mapping (4x4 blocks of in, register transpose, the
XOR-swizzled tile, guarded edges, TILES tiles per block) emulated thread by thread at every check
size and define set the sweeps use, and the bank groups of its 128-bit shared accesses. No GPU."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpuprof.variants import catalog

PIPELINED = catalog.load_family("transpose").variant("pipelined")
CHECK_SIZES = catalog.load_family("transpose").check_sizes
DEFINE_SETS = [
    {},
    {"TILES": 2},
    {"TILES": 3},
    {"TILES": 4, "BUFFERS": 1},
    {"BLOCK_ROWS": 8},
    {"TILE": 32, "BLOCK_ROWS": 8, "TILES": 4},
    {"SWIZZLE": 0},
]


def params(defines: dict[str, int]) -> dict[str, int]:
    return {**PIPELINED.defines, **defines}


def swizzle(t: np.ndarray, g: np.ndarray, on: int) -> np.ndarray:
    """pipelined.cu's swizzle(t, g): where float4 column g of tile row t is stored."""
    return g ^ ((t >> 2) & 7) if on else g


def emulate(rows: int, cols: int, defines: dict[str, int]) -> np.ndarray:
    """out as the kernel writes it (NaN where nothing was written); asserts every global access is in bounds."""
    p = params(defines)
    tile, block_rows, tiles, sw = p["TILE"], p["BLOCK_ROWS"], p["TILES"], p["SWIZZLE"]
    quads = tile // 4
    src = np.arange(rows * cols, dtype=np.float64)  # every element distinct: a misplaced one shows
    out = np.full(cols * rows, np.nan)
    writes = np.zeros(cols * rows, dtype=np.int64)
    vec_in, vec_out = cols % 4 == 0, rows % 4 == 0
    tx, ty = (a.reshape(-1) for a in np.meshgrid(np.arange(quads), np.arange(block_rows), indexing="xy"))

    def load(r_tile: int, c: np.ndarray) -> np.ndarray:  # q[thread, j, i, n]
        q = np.zeros((tx.size, quads // block_rows, 4, 4))
        for j in range(quads // block_rows):
            for i in range(4):
                r = r_tile + 4 * (ty + j * block_rows) + i
                for n in range(4):
                    vector = vec_in & (c < cols)
                    take = (r < rows) & (vector | (c + n < cols))
                    idx = r[take] * cols + c[take] + n
                    assert (idx < rows * cols).all() and (c[take] + n < cols).all()
                    q[take, j, i, n] = src[idx]
        return q

    grid_x, grid_y = -(-cols // tile), -(-rows // (tile * tiles))
    for bx in range(grid_x):
        for by in range(grid_y):
            c = bx * tile + 4 * tx
            first_row = by * tile * tiles
            q = load(first_row, c)
            for k in range(tiles):
                r_tile = first_row + k * tile
                if r_tile >= rows:
                    break
                smem = np.full((tile, quads, 4), np.nan)
                for j in range(quads // block_rows):
                    g = ty + j * block_rows
                    for n in range(4):  # register transpose: column n of the block, a float4 of out
                        t = 4 * tx + n
                        slot = swizzle(t, g, sw)
                        assert np.isnan(smem[t, slot, 0]).all(), "two threads store one float4 slot"
                        smem[t, slot] = q[:, j, :, n]
                if k + 1 < tiles and r_tile + tile < rows:
                    q = load(r_tile + tile, c)
                oc = r_tile + 4 * tx
                for j in range(tile // block_rows):
                    orow = bx * tile + ty + j * block_rows
                    t = ty + j * block_rows
                    v = smem[t, swizzle(t, tx, sw)]
                    assert not np.isnan(v).any(), "a read of a slot no thread stored"
                    vector = vec_out & (orow < cols) & (oc < rows)
                    assert (oc[vector] + 3 < rows).all(), "a float4 store past the row's end"
                    for n in range(4):
                        take = (orow < cols) & (vector | (oc + n < rows))
                        idx = orow[take] * rows + oc[take] + n
                        out[idx] = v[take, n]
                        writes[idx] += 1
    assert (writes == 1).all(), "every element of out is written exactly once"
    return out.reshape(cols, rows)


@pytest.mark.parametrize("defines", DEFINE_SETS, ids=str)
@pytest.mark.parametrize("size", CHECK_SIZES, ids=lambda s: f"{s['rows']}x{s['cols']}")
def test_emulated_kernel_is_an_exact_transpose(size, defines):
    rows, cols = size["rows"], size["cols"]
    expected = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols).T
    np.testing.assert_array_equal(emulate(rows, cols, defines), expected)


def quarter_warp_wavefronts(slots: np.ndarray) -> int:
    """Shared-memory wavefronts of one warp's 128-bit accesses (4 when conflict-free): each quarter-
    warp's distinct float4 slots, the most of them in one of the 8 bank groups of 16 bytes."""
    return sum(int(np.bincount(np.unique(quarter) % 8, minlength=8).max()) for quarter in slots.reshape(4, 8))


def shared_accesses(defines: dict[str, int]):
    """(phase, float4 slots of one warp) for every STS.128 and LDS.128 of one tile."""
    p = params(defines)
    tile, block_rows, sw = p["TILE"], p["BLOCK_ROWS"], p["SWIZZLE"]
    quads = tile // 4
    lane = np.arange(quads * block_rows)
    tx, ty = lane % quads, lane // quads  # threadIdx.x varies fastest in a warp
    for warp in range(lane.size // 32):
        w = slice(32 * warp, 32 * warp + 32)
        for j in range(quads // block_rows):
            g = ty[w] + j * block_rows
            for n in range(4):
                t = 4 * tx[w] + n
                yield "store", t * quads + swizzle(t, g, sw)
        for j in range(tile // block_rows):
            t = ty[w] + j * block_rows
            yield "load", t * quads + swizzle(t, tx[w], sw)


@pytest.mark.parametrize("defines", [d for d in DEFINE_SETS if d.get("SWIZZLE", 1)], ids=str)
def test_swizzled_tile_is_free_of_bank_conflicts(defines):
    worst: dict[str, int] = {}
    for phase, slots in shared_accesses(defines):
        worst[phase] = max(worst.get(phase, 0), quarter_warp_wavefronts(slots))
    assert worst == {"store": 4, "load": 4}


def test_the_plain_layout_conflicts_on_the_stores():
    """SWIZZLE 0 is the comparison point: the store phase's quarter-warp hits one bank group."""
    worst: dict[str, int] = {}
    for phase, slots in shared_accesses({"SWIZZLE": 0}):
        worst[phase] = max(worst.get(phase, 0), quarter_warp_wavefronts(slots))
    assert worst == {"store": 32, "load": 4}


def test_kernel_source_uses_the_emulated_swizzle_and_the_manifest_defaults():
    text = PIPELINED.file.read_text()
    assert "return g ^ ((t >> 2) & 7);" in text
    assert "buf[4 * tx + 0][swizzle(4 * tx + 0, g)] = make_float4(q[j][0].x, q[j][1].x, q[j][2].x, q[j][3].x);" in text
    assert "const float4 v = buf[t][swizzle(t, tx)];" in text
    for name, value in PIPELINED.defines.items():
        assert re.search(rf"#define {name} {value}\n", text), name
