"""Two manifest features the tensor-core families need, on any family folder: `switches` (a dim that is
0 or 1, like attention's causal mask) and a variant's own compile target (`arch = "sm_90a"`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuprof.commands.build import build_variant
from gpuprof.errors import InputError, UsageError
from gpuprof.tools import nvcc
from gpuprof.variants import catalog, cubin, nvrtc, sizes
from gpuprof.variants.catalog import size_problem
from tests.variants.test_catalog import write_family

TWO_DIMS = {'dims': 'dims = ["n", "causal"]', 'grid_dims': 'grid_dims = ["n"]',
                'default_size': "default_size = { n = 1024, causal = 0 }",
                'check_sizes': "check_sizes = [{ n = 1, causal = 1 }, { n = 77, causal = 0 }]"}


def switched_family(tmp_path, **extra: str) -> catalog.Family:
    path = write_family(tmp_path, **{**TWO_DIMS, **extra})
    path.write_text(path.read_text().replace('dims = ["n", "causal"]', 'dims = ["n", "causal"]\nswitches = ["causal"]'))
    return catalog.parse_manifest(path)


def test_a_switch_takes_zero_and_one(tmp_path):
    fam = switched_family(tmp_path)
    assert fam.switches == ("causal",)
    assert fam.default_size == {"n": 1024, "causal": 0}
    assert sizes.parse_size(fam, "n=5,causal=0") == {"n": 5, "causal": 0}
    assert sizes.parse_size(fam, "n=5,causal=1") == {"n": 5, "causal": 1}


@pytest.mark.parametrize(("text", "why"), [("n=5,causal=2", "causal is a switch, 0 or 1"),
                                            ("n=0,causal=1", "n must be a positive integer")])
def test_a_switch_other_than_zero_or_one_and_a_zero_extent_are_refused(tmp_path, text, why):
    fam = switched_family(tmp_path)
    with pytest.raises(UsageError, match=why):
        sizes.parse_size(fam, text)


def test_a_manifest_size_breaking_a_switch_names_the_key(tmp_path):
    path = write_family(tmp_path, **{**TWO_DIMS, "default_size": "default_size = { n = 1024, causal = 3 }"})
    path.write_text(path.read_text().replace('dims = ["n", "causal"]', 'dims = ["n", "causal"]\nswitches = ["causal"]'))
    with pytest.raises(InputError, match="'default_size'.*causal is a switch"):
        catalog.parse_manifest(path)


def test_zero_is_refused_for_a_dim_that_is_no_switch(tmp_path):
    path = write_family(tmp_path, **{**TWO_DIMS, "default_size": "default_size = { n = 1024, causal = 0 }"})
    with pytest.raises(InputError, match="causal must be a positive integer"):
        catalog.parse_manifest(path)


def test_size_problem():
    fam = catalog.load_family("attention_bf16")
    assert size_problem(fam, fam.default_size) is None
    assert "switch" in (size_problem(fam, {**fam.default_size, "causal": 2}) or "")
    assert "positive" in (size_problem(fam, {**fam.default_size, "s": 0}) or "")


# ---- arch ----------------------------------------------------------------------------------------

def test_arch_specific_targets_are_one_gencode():
    assert nvcc.arch_flags("sm_90a") == ["-gencode=arch=compute_90a,code=sm_90a"]
    assert nvcc.arch_flags("sm_100f") == ["-gencode=arch=compute_100f,code=sm_100f"]
    assert nvcc.arch_flags("sm_90") == ["-arch=sm_90"]


def test_a_bad_arch_in_a_manifest_names_the_key(tmp_path):
    path = write_family(tmp_path)
    path.write_text(path.read_text() + 'arch = "hopper"\n')
    with pytest.raises(InputError, match="'arch' is 'hopper'"):
        catalog.parse_manifest(path)


def test_arch_variant_runs_on_its_own_architecture_only():
    variant = catalog.Variant(name="w", technique="t", arch="sm_90a")
    assert nvrtc.runs_here(variant, "sm_90") is None
    assert "sm_90a" in (nvrtc.runs_here(variant, "sm_80") or "")
    assert nvrtc.runs_here(replace(variant, arch=None), "sm_80") is None
    assert "-arch=sm_90a" in nvrtc.nvrtc_options(variant)


def test_build_refuses_another_arch_for_an_arch_variant():
    fam = catalog.load_family("gemm_bf16")
    wgmma = next(v for v in fam.variants if v.arch)
    result = build_variant(fam, wgmma, "sm_80")
    assert result.usage is None and "built for sm_90a only" in (result.error or "")


@pytest.mark.skipif(not cubin.nvcc_available(), reason="nvcc not on PATH")
def test_build_compiles_an_arch_variant_for_its_target():
    fam = catalog.load_family("gemm_bf16")
    wgmma = next(v for v in fam.variants if v.arch)
    result = build_variant(fam, wgmma, "sm_90")
    assert result.error is None and result.usage is not None and result.usage.registers > 0


@pytest.mark.skipif(not cubin.nvcc_available(), reason="nvcc not on PATH")
@pytest.mark.parametrize("family", ["gemm_bf16", "attention_bf16"])
def test_hopper_rungs_build_without_local_memory(family):
    """The wgmma rungs (their shared hopper.cuh included by a relative path from attention_bf16) build
    for sm_90a; the accumulators stay in registers: no stack frame, no spills."""
    fam = catalog.load_family(family)
    (variant,) = [v for v in fam.variants if v.arch == "sm_90a"]
    result = build_variant(fam, variant, "sm_90")
    assert result.error is None and result.usage is not None, result.error
    assert result.usage.arch == "sm_90a" and result.usage.registers > 0
    assert result.usage.stack_bytes == 0 and not result.usage.spills


# ---- results files -------------------------------------------------------------------------------

def _recorded() -> dict:
    import json
    from pathlib import Path

    return json.loads((Path(__file__).resolve().parents[1] / "fixtures/results/h100_user_family.json").read_text())


def test_a_results_file_holds_a_zero_only_for_a_switch_its_families_block_declares():
    from gpuprof import results

    data = _recorded()
    row = data["rows"][0]
    row["size"] = {**row["size"], "causal": 0}
    with pytest.raises(InputError, match="size.causal must be a positive integer, not 0"):
        results.from_dict(data)
    data["families"]["by_name"][row["family"]]["switches"] = ["causal"]
    loaded = results.from_dict(data)
    assert loaded.rows[0].size["causal"] == 0
    assert results.from_dict(results.to_dict(loaded)).families[row["family"]].switches == ("causal",)


# ---- code gpuprof did not write, and hostile places ----------------------------------------------

TUTORIAL_WMMA = Path(__file__).resolve().parents[1] / "kernels" / "course_shapes" / "wmma_bf16_tutorial.cu"


def test_a_tutorial_wmma_kernel_is_accepted_by_gemm_bf16_as_learners_write_it():
    """No const, no __restrict__, `__nv_bfloat16*` for the family's `const __nv_bfloat16* __restrict__`."""
    from gpuprof.variants.user import parse_add, to_variant

    variant = to_variant(catalog.load_family("gemm_bf16"), parse_add(str(TUTORIAL_WMMA), block="128,4"))
    assert variant.kernel == "wmma_gemm" and variant.args is None


@pytest.mark.skipif(not cubin.nvcc_available(), reason="nvcc not on PATH")
def test_a_tutorial_wmma_kernel_builds_with_the_toolkits_headers():
    from gpuprof.commands.build import build_file

    (result,) = build_file(TUTORIAL_WMMA, "sm_90")
    assert result.error is None and result.usage is not None and not result.usage.spills


@pytest.mark.skipif(not cubin.nvcc_available(), reason="nvcc not on PATH")
def test_an_arch_variant_in_a_folder_named_like_a_command_builds_and_runs_nothing(tmp_path, monkeypatch):
    import shutil

    from gpuprof.families import registry

    hostile = tmp_path / "$(touch PWNED)" / "gemm_bf16"
    shutil.copytree(catalog.load_family("gemm_bf16").directory, hostile)
    monkeypatch.chdir(tmp_path)
    fam = registry.resolve(hostile)
    wgmma = next(v for v in fam.variants if v.arch)
    result = build_variant(fam, wgmma, "sm_90")
    assert result.error is None and result.usage is not None and result.usage.arch == "sm_90a"
    assert not list(tmp_path.rglob("PWNED"))
