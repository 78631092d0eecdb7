"""scan's host module: byte counts, the n-dependent tolerance, the scan-then-propagate schedule
plan() builds, and the kernels under other -D values. No GPU."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof.families import scan
from gpuprof.variants import catalog
from gpuprof.variants.catalog import Variant

FAMILY = catalog.load_family("scan")


def test_bytes_are_one_read_and_one_write():
    assert scan.bytes_moved({"n": 2**28}) == 2 * 4 * 2**28  # 2 GiB: 0.72 ms at 3.0 TB/s
    assert scan.flop({"n": 2**28}) == 2**28


STUDENT = Variant(name="mine", technique="t", user=True)


def test_tolerance_grows_like_sqrt_n_from_a_floor():
    assert scan.tolerance(FAMILY.variant("cub"), {"n": 1}) == 260 * 2**-24
    assert scan.tolerance(STUDENT, {"n": 2**28}) == scan.tolerance(STUDENT, {"n": 1000003}) == 260 * 2**-24
    assert scan.tolerance(STUDENT, {"n": 2**30}) == pytest.approx(2 * 260 * 2**-24)  # sqrt(n) past 2^28
    assert scan.tolerance(STUDENT, {"n": 2**28}) > 3 * 3.7e-6  # the worst error measured on an H100 at 2^28 (cub)
    serial = Variant(name="mine", technique="t", user=True, error_model="serial")
    assert scan.tolerance(serial, {"n": 2**20}) == pytest.approx(2**-24 * 2**10)


def test_one_dropped_element_fails_at_a_small_check_size():
    """Uniform [0, 1) inputs: a dropped element shifts later prefixes (~i/2) by ~0.5."""
    n = 1025
    assert 0.5 / (n / 2) > 10 * scan.tolerance(STUDENT, {"n": n})


class Recorder:
    """Stands in for a compiled kernel: keeps every launch's grid, block and args, and the dynamic
    shared memory of each launch in `shared`."""

    def __init__(self, name, log):
        self.name, self.log, self.shared = name, log, []

    def __call__(self, grid, block, args, stream=None, shared_mem=0):
        self.log.append((self.name, grid, block, args))
        self.shared.append(shared_mem)


SM_COUNT = 132  # an H100 SXM, for the per_sm grids


def manifest_grid(v, n):
    """What sizes.grid_for gives on a 132-SM GPU (without asking a GPU)."""
    if v.grid.startswith("per_sm:"):
        return (SM_COUNT * int(v.grid.split(":")[1]),)
    return (math.ceil(n / v.tile_dims()[0]),)


def planned(variant_name, n, monkeypatch, functions_out=None):
    monkeypatch.setattr(scan, "cupy", lambda: np)  # workspace from numpy: no GPU needed to plan
    v = FAMILY.variant(variant_name)
    log: list = []
    functions = {name: Recorder(name, log) for name in (v.kernel, *v.extra_kernels)}
    tile = v.tile_dims()[0]
    ctx = SimpleNamespace(grid=manifest_grid(v, n), block=v.block_dims(), sm_count=SM_COUNT,
                          shared_mem=v.dynamic_smem_bytes())
    x, out = np.zeros(n, np.float32), np.zeros(n, np.float32)
    scan.plan(v, functions, {"x": x}, out, {"n": n}, ctx)(stream=None)
    if functions_out is not None:
        functions_out.update(functions)
    return v, tile, log, x, out


@pytest.mark.parametrize("n", [1, 1024, 1025, 4097, 1000003, 1048579, 2**28])
@pytest.mark.parametrize("name", ["hillis_steele", "blelloch", "scan_then_propagate", "warp_shuffle"])
def test_propagate_schedule_scans_every_level_and_adds_back_down(name, n, monkeypatch):
    v, tile, log, x, out = planned(name, n, monkeypatch)
    scans = [e for e in log if e[0] == v.kernel]
    counts = [int(e[3][2]) for e in scans]
    assert counts[0] == n and scans[0][3][0] is x and scans[0][3][1] is out
    for a, b in itertools.pairwise(counts):
        assert b == math.ceil(a / tile) - 1  # the next level scans the totals of all tiles but the last
    assert math.ceil(counts[-1] / tile) == 1  # the top level fits in one tile
    for _, grid, block, args in scans:
        assert grid == (math.ceil(int(args[2]) / tile),) and block == v.block_dims()
    adds = [e for e in log if e[0].endswith("_add")]
    totals = [e for e in log if e[0].endswith("_totals")]
    assert len(adds) == len(totals) == len(scans) - 1
    for (_, grid, _, args), count in zip(reversed(adds), counts):
        assert grid == (math.ceil(count / tile) - 1,) and int(args[2]) == count  # one block per tile after the first
    if adds:
        assert log[-1][0].endswith("_add") and log[-1][3][0] is out  # the last launch fixes up y itself


LOOKBACKS = [v.name for v in FAMILY.variants if v.plan == "lookback"]


def test_the_single_pass_scans_include_the_pipelined_one():
    assert {"decoupled_lookback", "pipelined_lookback"} <= set(LOOKBACKS)


@pytest.mark.parametrize("n", [1, 4097, 2**28])
@pytest.mark.parametrize("name", LOOKBACKS)
def test_lookback_plan_resets_then_scans_once(name, n, monkeypatch):
    v, tile, log, x, out = planned(name, n, monkeypatch)
    (reset, grid_r, _, (tiles,)), (main, grid, _, args) = log
    assert reset.endswith("_reset") and main == v.kernel
    assert int(tiles) == math.ceil(n / tile)  # the reset covers every tile's status word
    assert grid == manifest_grid(v, n)  # one block per tile, or a persistent grid that loops over tiles
    assert grid_r[0] * scan.HELPER_THREADS >= int(tiles) + 1
    assert args[0] is x and args[1] is out and int(args[2]) == n


@pytest.mark.parametrize("n", [4097, 2**28])
def test_the_pipelined_scan_gets_its_stages_of_shared_memory_and_the_reset_none(n, monkeypatch):
    functions: dict = {}
    v, tile, log, _, _ = planned("pipelined_lookback", n, monkeypatch, functions)
    assert v.grid == "per_sm:8" and log[1][1] == (8 * SM_COUNT,)
    stages = v.defines["STAGES"]
    assert functions[v.kernel].shared == [stages * tile * 4] == [1 * 6144 * 4]
    assert functions[v.helper("reset")].shared == [0]


def test_the_pipelined_tiles_are_the_decoupled_ones():
    """The tolerance's look-back model (tests/families/test_tolerances.py) chains 6144-element tiles."""
    assert FAMILY.variant("pipelined_lookback").tile_dims() == FAMILY.variant("decoupled_lookback").tile_dims()


ALTERNATIVES = [
    ("hillis_steele", {"BLOCK": 256}), ("blelloch", {"BLOCK": 1024}), ("blelloch_conflict_free", {"BLOCK": 128}),
    ("scan_then_propagate", {"BLOCK": 1024, "ITEMS": 4}), ("scan_then_propagate", {"BLOCK": 128, "ITEMS": 32}),
    ("warp_shuffle", {"BLOCK": 1024, "ITEMS": 4}), ("warp_shuffle", {"BLOCK": 128, "ITEMS": 32}),
    ("decoupled_lookback", {"BLOCK": 512, "ITEMS": 8}), ("decoupled_lookback", {"BLOCK": 64, "ITEMS": 64}),
    # the sweep the pipelined scan's header proposes (STAGES x ITEMS x BLOCK, streaming stores)
    ("pipelined_lookback", {"STAGES": 1}), ("pipelined_lookback", {"STAGES": 3, "MIN_BLOCKS": 3}),
    ("pipelined_lookback", {"ITEMS": 16, "MIN_BLOCKS": 6}), ("pipelined_lookback", {"ITEMS": 32, "MIN_BLOCKS": 3}),
    ("pipelined_lookback", {"BLOCK": 128, "ITEMS": 48, "MIN_BLOCKS": 4}),
    ("pipelined_lookback", {"BLOCK": 512, "ITEMS": 12, "MIN_BLOCKS": 2}),
    ("pipelined_lookback", {"BLOCK": 64, "ITEMS": 32}), ("pipelined_lookback", {"STREAM_STORES": 1}),
    ("pipelined_lookback", {"STAGES": 1, "MIN_BLOCKS": 5}),
    ("pipelined_lookback", {"STAGES": 1, "BLOCK": 128, "ITEMS": 48, "MIN_BLOCKS": 7}),
]


@pytest.mark.nvcc
@pytest.mark.parametrize(("name", "defines"), ALTERNATIVES, ids=[f"{n}-{d}" for n, d in ALTERNATIVES])
def test_alternative_defines_compile_without_spills(build_clean, name, defines):
    usage = build_clean("scan", name, defines)
    assert usage.registers * FAMILY.variant(name).with_defines(defines).block_dims()[0] <= 65536


@pytest.mark.nvcc
def test_the_pipelined_scan_needs_a_warp_besides_the_looking_back_one():
    """Warps 1..NWARPS-1 publish the prefetched tile while warp 0 looks back: one warp is refused."""
    from gpuprof.commands.build import build_variant

    result = build_variant(FAMILY, FAMILY.variant("pipelined_lookback").with_defines({"BLOCK": 32, "ITEMS": 16}),
                           "sm_90")
    assert result.error is not None and "2..32 whole warps" in result.error
