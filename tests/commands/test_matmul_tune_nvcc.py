"""suites/matmul_tune.toml (issue 15 item 6): every tile the sweep tries compiles for sm_90 with
nvcc, spill-free, within the register file and the shared-memory limit, so a tuning run on the GPU
spends its time timing, not on cases the kernel's static_asserts reject."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.commands.build import build_family
from gpuprof.suite_file import load_suite
from gpuprof.variants import catalog

pytestmark = pytest.mark.nvcc

SUITE = Path(__file__).resolve().parents[2] / "suites" / "matmul_tune.toml"
MAX_REGISTERS_PER_SM = 65536


def swept_variants() -> list[catalog.Variant]:
    family = catalog.load_family("matmul")
    suite = load_suite(SUITE, known={"matmul": family.variant_names}, size_keys={"matmul": list(family.dims)})
    seen: dict[tuple, catalog.Variant] = {}
    for case in suite.cases:
        if case.defines:
            (variant,) = family.apply_defines([family.variant(case.variants[0])], case.defines)
            seen.setdefault(tuple(sorted(variant.defines.items())), variant)
    return list(seen.values())


def test_every_swept_tile_compiles_without_spills():
    family = catalog.load_family("matmul")
    variants = swept_variants()
    assert len(variants) >= 20
    for variant, result in zip(variants, build_family(family, variants, "sm_90"), strict=True):
        assert result.error is None, (variant.defines, result.error)
        usage = result.usage
        assert not usage.spills, (variant.defines, usage.spill_store_bytes, usage.spill_load_bytes)
        threads = variant.block_dims()[0]
        assert usage.registers * threads <= MAX_REGISTERS_PER_SM, variant.defines
        assert usage.shared_bytes + variant.dynamic_smem_bytes() <= catalog.MAX_DYNAMIC_SMEM_BYTES
