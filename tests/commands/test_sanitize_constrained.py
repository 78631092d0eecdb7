"""`gpuprof sanitize` runs a constrained variant at the nearest size its constraints allow, as `run` checks it."""

from __future__ import annotations

from gpuprof.commands.sanitize import launch_targets, sanitize_size
from gpuprof.commands.target import Target
from gpuprof.variants import catalog
from gpuprof.variants.selection import VariantOptions


def test_tiled_variants_are_sanitized_at_an_allowed_size():
    fam = catalog.load_family("gemm_bf16")
    targets = {t.variant: t.size for t in launch_targets([(fam, list(fam.variants))],
                                                          Target(families=("gemm_bf16",), options=VariantOptions()))}
    middle = sanitize_size(list(fam.check_sizes))
    assert targets["naive"] == middle  # no constraint: the family's middle check size as it is
    for name, (bm, bn, bk) in {"wmma": (128, 128, 32), "wgmma": (128, 256, 64)}.items():
        m, n, k = targets[name]["m"], targets[name]["n"], targets[name]["k"]
        assert (m % bm, n % bn, k % bk) == (0, 0, 0)


def test_a_switch_counts_as_no_extent_when_the_middle_size_is_chosen():
    sizes = [{"s": 10, "causal": 0}, {"s": 50, "causal": 1}, {"s": 30, "causal": 0}]
    assert sanitize_size(sizes) == {"s": 30, "causal": 0}
