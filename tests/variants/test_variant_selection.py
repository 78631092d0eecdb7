"""variants/selection.py: -D, --add, --block/--tile/--grid and --kernels-dir as one value, and the rule
that turns them and --variants into each family's chosen variants (the CLI, api and cores share it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.errors import UsageError
from gpuprof.variants import catalog
from gpuprof.variants.selection import VariantOptions, parse_defines

KERNEL = ('extern "C" __global__ void mine(const float* __restrict__ a, const float* __restrict__ b, '
          'float* __restrict__ c, int n) {}\n')


@pytest.fixture
def mine(tmp_path: Path) -> str:
    path = tmp_path / "mine.cu"
    path.write_text(KERNEL)
    return str(path)


def test_parse_defines_keeps_order_and_reads_any_integer_base():
    assert parse_defines(["BM=64", "BN=0x40", "K=-1"]) == {"BM": 64, "BN": 64, "K": -1}
    assert parse_defines(None) == {}


@pytest.mark.parametrize(("item", "why"), [("BM", "write NAME=INTEGER"), ("1X=3", "write NAME=INTEGER"),
                                           ("=3", "write NAME=INTEGER"), ("BM=x", "'x' is not an integer")])
def test_parse_defines_refuses_what_is_no_define(item, why):
    with pytest.raises(UsageError, match=why):
        parse_defines([item])


def test_nothing_given_selects_as_the_family_does():
    fam = catalog.load_family("vecadd")
    options = VariantOptions()
    assert not options.given and not options.brings_variants
    [(same, chosen, extra)] = options.select([fam], "grid,vectorized")
    assert same.name == "vecadd" and [v.name for v in chosen] == ["grid", "vectorized"] and extra == []
    assert [v.name for v in options.select([fam], None)[0][1]] == fam.variant_names
    assert options.cli_args() == () and options.defines() == {}


def test_add_joins_the_selection_and_its_options_reach_a_child(mine):
    options = VariantOptions(add=[mine], block="128")
    assert options.given and options.brings_variants
    [(fam, chosen, extra)] = options.select([catalog.load_family("vecadd")], "grid")
    assert [v.name for v in chosen] == ["grid", "mine"] and [v.name for v in extra] == ["mine"]
    assert "mine" in fam.variant_names
    args = options.cli_args()
    assert args[args.index("--add") + 1] == str(Path(mine).resolve()) and args[args.index("--block") + 1] == "128"


def test_geometry_without_add_is_an_error():
    with pytest.raises(UsageError, match="--block, --tile, --grid, --args and --reads-output go with --add FILE"):
        VariantOptions(tile="16,16").select([catalog.load_family("vecadd")], None)


def test_defines_reach_the_chosen_cuda_variants_only():
    matmul = catalog.load_family("matmul")
    [(_, chosen, _)] = VariantOptions(define=["BM=64"]).select([matmul], "blocktile_2d,cublas")
    tiled, vendor = chosen
    assert tiled.defines["BM"] == 64 and vendor.defines == {}


def test_one_selection_for_several_families():
    fams = [catalog.load_family("vecadd"), catalog.load_family("matmul")]
    selected = VariantOptions().select(fams, None)
    assert [fam.name for fam, _, _ in selected] == ["vecadd", "matmul"]


def test_kernels_dir_brings_variants():
    assert VariantOptions(kernels_dir=Path("mine")).brings_variants


@pytest.mark.parametrize("options", [VariantOptions(args="M,N,K"), VariantOptions(reads_output=True)])
def test_args_and_reads_output_without_add_are_an_error(options):
    with pytest.raises(UsageError, match="go with --add FILE"):
        options.select([catalog.load_family("matmul")], None)
