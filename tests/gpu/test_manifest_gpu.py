"""On a GPU: behaviour follows the manifest's keys, not the variant's name (issue 11 item 2), and
the tolerances catch the planted losses at the benchmark size (issue 12 item 2).

The planted kernels are the shipped ones with one line changed, written to a --kernels-dir at test
time, so they stay in step with the lesson code they break."""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

import pytest

from gpuprof import results
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.variants import catalog, headers

pytestmark = pytest.mark.gpu

KERNELS = catalog.kernels_root()


def planted(tmp_path: Path, family: str, shipped: str, name: str, edits: list[tuple[str, str]], keys: str) -> list:
    """A --kernels-dir variant `name`: kernels/<family>/<shipped>.cu with each (old, new) applied once."""
    text = (KERNELS / family / f"{shipped}.cu").read_text().replace(f"{family}_{shipped}", f"{family}_{name}")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (tmp_path / f"{name}.cu").write_text(text)
    for header in headers.kernel_headers(KERNELS / family / f"{shipped}.cu"):  # e.g. scan's lookback.cuh
        (tmp_path / header.name).write_text(header.read_text())
    manifest = tmp_path / f"{family}.toml"
    manifest.write_text(textwrap.dedent(f"""\
        [[variant]]
        name = "{name}"
        file = "{name}.cu"
        kernel = "{family}_{name}"
        technique = "planted (test)"
        """) + keys)
    # parsed as --kernels-dir parses it (its signature check is tested elsewhere)
    (table,) = tomllib.loads(manifest.read_text())["variant"]
    return [catalog.parse_variant(manifest, 1, table, user=True)]


ATOMIC_KEYS = 'block = ["BLOCK"]\ngrid = "per_sm:2"\ndefines = { BLOCK = 1024, UNROLL = 4 }\nplan = "single"\n'


def test_an_atomic_reduce_under_another_name_is_zeroed_by_its_manifest_key(tmp_path):
    extra = planted(tmp_path, "reduce", "vectorized_atomic", "mine", [], ATOMIC_KEYS + "zero_output = true\n")
    row, = run_family(RunRequest(family="reduce", variants=["mine"], extra_variants=extra, check_only=True)).rows
    assert row.check.status == results.OK, row.check.reasons


def test_without_zero_output_the_same_kernel_is_wrong(tmp_path):
    extra = planted(tmp_path, "reduce", "vectorized_atomic", "mine", [], ATOMIC_KEYS)
    row, = run_family(RunRequest(family="reduce", variants=["mine"], extra_variants=extra, check_only=True)).rows
    assert row.check.status == results.WRONG  # atomics into the NaN poison


def test_a_lost_block_of_vectorized_atomic_fails_at_2_28(tmp_path):
    extra = planted(tmp_path, "reduce", "vectorized_atomic", "lost_block",
                    [("atomicAdd(out, sum);", "if (blockIdx.x != gridDim.x / 2) atomicAdd(out, sum);")],
                    ATOMIC_KEYS + "zero_output = true\n")
    row, = run_family(RunRequest(family="reduce", variants=["lost_block"], extra_variants=extra, check_only=True)).rows
    assert row.check.status == results.WRONG
    assert any(r.startswith("268435456:") for r in row.check.reasons), row.check.reasons


LOOKBACK_KEYS = ('block = ["BLOCK"]\ntile = ["BLOCK * ITEMS"]\ndefines = { BLOCK = 128, ITEMS = 48 }\n'
                 'plan = "lookback"\nhelpers = { reset = "scan_lost_tile_reset" }\n')


@pytest.mark.parametrize("n", [2**27, 2**28])
def test_a_lost_lookback_tile_fails_at_the_benchmark_size(tmp_path, n):
    """Tile tiles/3 publishes 0 instead of its aggregate: every later prefix misses ~3072."""
    lose = "(tile == (n / TILE) / 3 ? 0.f : aggregate)"
    extra = planted(tmp_path, "scan", "decoupled_lookback", "lost_tile", [
        ("publish(tile, FLAG_AGGREGATE, aggregate);", f"publish(tile, FLAG_AGGREGATE, {lose});"),
        ("publish(tile, FLAG_INCLUSIVE, prefix + aggregate);", f"publish(tile, FLAG_INCLUSIVE, prefix + {lose});"),
    ], LOOKBACK_KEYS)  # the reset helper is renamed with the kernel: scan_lost_tile_reset
    row, = run_family(RunRequest(family="scan", variants=["lost_tile"], size={"n": n}, extra_variants=extra,
                                 check_only=True)).rows
    assert row.check.status == results.WRONG
    assert any(r.startswith(f"{n}:") for r in row.check.reasons), row.check.reasons


def test_a_student_matmul_named_tf32_is_checked_and_judged_as_fp32(tmp_path):
    extra = planted(tmp_path, "matmul", "smem_tiled", "mine_tf32", [],
                    'block = ["TILE", "TILE"]\ntile = ["TILE", "TILE"]\ndefines = { TILE = 32 }\n')
    row, = run_family(RunRequest(family="matmul", variants=["mine_tf32"], size={"m": 1024, "n": 1024, "k": 1024},
                                 extra_variants=extra, check_only=True)).rows
    assert row.check.status == results.OK and row.precision == "fp32"
    assert row.check.tolerance < 1e-4  # the FP32 dot-product bound, not TF32's
