"""The adversarial kernels of tests/kernels/adversarial/ load as --kernels-dir manifests and compile
with nvcc for sm_90 (the GPU test, tests/gpu/test_integrity_gpu.py, runs them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.commands.build import build_family
from gpuprof.variants import catalog
from gpuprof.variants.user import load_kernels_dir

ADVERSARIAL = Path(__file__).resolve().parents[1] / "kernels" / "adversarial"
EXPECTED = {
    "vecadd": {"caches_result", "writes_half", "first_call_only", "zeroes_inputs", "other_stream"},
    "reduce": {"lost_block_atomic"},
    "scan": {"lost_tile"},
    "matmul": {"off_by_one_edge", "memo_tiles"},
}


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_manifest_loads_with_every_planted_variant(family):
    variants = load_kernels_dir(ADVERSARIAL, catalog.load_family(family))
    assert {v.name for v in variants} == EXPECTED[family]
    assert all(v.user for v in variants)


@pytest.mark.nvcc
@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_planted_cuda_variants_compile_for_sm_90(family):
    fam = catalog.load_family(family)
    variants = [v for v in load_kernels_dir(ADVERSARIAL, fam) if v.is_cuda]
    built = build_family(fam, variants, "sm_90")
    assert [b.variant for b in built] == [v.name for v in variants]
    for b in built:
        assert b.error is None, b.error
        assert b.usage.registers > 0 and not b.usage.spills, b.variant
