"""tests/kernels/planted: the GEMM and attention test kernels with planted bugs (on the GPU,
tests/gpu/test_planted_gpu.py shows the check and racecheck catch them). Here, without a GPU: both
manifests load through gpuprof's own --kernels-dir loader, the variants differ only in the plant
defines their names promise, every plant combination compiles for sm_90 without a spill, each plant
changes the code it says it changes, and each file's header says it is test data and what each
plant does."""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path

import pytest

from gpuprof.commands.build import build_variant
from gpuprof.variants import catalog, cubin
from gpuprof.variants.user import load_kernels_dir

PLANTED = Path(__file__).resolve().parents[1] / "kernels" / "planted"
ARCH = "sm_90"
needs_nvcc = pytest.mark.skipif(not cubin.nvcc_available(), reason="nvcc not on PATH")

# family -> (file, kernel, {variant: the plant defines it sets})
EXPECTED = {
    "gemm_bf16": ("pipeline_gemm.cu", "gemm_bf16_planted", {
        "planted_ok": {"PLANT_NO_BARRIER": 0, "PLANT_WRONG_SWIZZLE": 0},
        "planted_no_barrier": {"PLANT_NO_BARRIER": 1, "PLANT_WRONG_SWIZZLE": 0},
        "planted_wrong_swizzle": {"PLANT_NO_BARRIER": 0, "PLANT_WRONG_SWIZZLE": 1},
    }),
    "attention_bf16": ("tiny_attention.cu", "attention_bf16_planted", {
        "planted_ok": {"PLANT_NO_BARRIER": 0},
        "planted_no_barrier": {"PLANT_NO_BARRIER": 1},
    }),
}
# what each file's header must say of each plant (words of its description)
HEADER_WORDS = {
    ("gemm_bf16", "PLANT_NO_BARRIER"): ("__syncthreads()", "cp.async", "race", "racecheck"),
    ("gemm_bf16", "PLANT_WRONG_SWIZZLE"): ("ldmatrix", "XOR", "cp.async", "WRONG"),
    ("attention_bf16", "PLANT_NO_BARRIER"): ("__syncthreads()", "K and V", "race", "racecheck"),
}


def planted(family: str) -> tuple[catalog.Family, list[catalog.Variant]]:
    fam = catalog.load_family(family)
    return fam, load_kernels_dir(PLANTED, fam)


def plants(family: str) -> list[str]:
    return sorted(EXPECTED[family][2]["planted_ok"])


def cases() -> list[tuple[str, str]]:
    return [(family, name) for family, (_, _, variants) in EXPECTED.items() for name in variants]


def combinations() -> list[tuple[str, dict[str, int]]]:
    return [(family, dict(zip(plants(family), values)))
            for family in EXPECTED for values in itertools.product((0, 1), repeat=len(plants(family)))]


@pytest.mark.parametrize("family", EXPECTED)
def test_the_manifest_loads_through_the_kernels_dir_loader(family):
    file, kernel, variants = EXPECTED[family]
    _, loaded = planted(family)
    assert [v.name for v in loaded] == list(variants)
    for v in loaded:
        assert v.user and v.is_cuda and v.file is not None and v.file.resolve() == (PLANTED / file).resolve()
        assert v.kernel == kernel and v.precision in ("bf16", "fp32") and v.technique.startswith("test data")
        assert v.block_dims() == (128, 1, 1)
    if family == "gemm_bf16":
        assert all(v.tile == (64, 64) and v.precision == "bf16" for v in loaded)
        assert all(v.require == ("M % 64 == 0", "N % 64 == 0", "K % 32 == 0") for v in loaded)
    else:
        assert all(v.grid_exprs == ("ceil(S/ROWS)", "B*H") and v.require == ("D <= 128",) for v in loaded)


@pytest.mark.parametrize("family", EXPECTED)
def test_the_variants_differ_only_in_the_plant_their_name_promises(family):
    _, _, expected = EXPECTED[family]
    _, loaded = planted(family)
    by_name = {v.name: v for v in loaded}
    ok = by_name["planted_ok"]
    assert {k: ok.defines[k] for k in plants(family)} == expected["planted_ok"]
    assert all(value == 0 for value in expected["planted_ok"].values())
    for name, defines in expected.items():
        v = by_name[name]
        assert set(plants(family)) <= set(v.defines), (name, v.defines)
        assert all(v.defines[k] in (0, 1) for k in plants(family))
        differ = {k for k in set(v.defines) | set(ok.defines) if v.defines.get(k) != ok.defines.get(k)}
        promised = {k for k, value in defines.items() if value == 1}
        assert differ == promised, (name, differ)
        assert len(promised) == (0 if name == "planted_ok" else 1)
        assert name == "planted_ok" or f"PLANT_{name.removeprefix('planted_').upper()}" in promised
        # nothing else of the manifest differs: same file, kernel, launch and constraints
        assert (v.file, v.kernel, v.block, v.tile, v.grid_exprs, v.require) == \
            (ok.file, ok.kernel, ok.block, ok.tile, ok.grid_exprs, ok.require)


@pytest.mark.parametrize("family", EXPECTED)
def test_each_plant_defaults_to_off_in_the_source(family):
    source = (PLANTED / EXPECTED[family][0]).read_text()
    found = re.findall(r"#ifndef (PLANT_\w+)\n#define \1 (\d)\n#endif", source)
    assert sorted(found) == [(k, "0") for k in plants(family)]
    assert set(re.findall(r"\bPLANT_\w+", source)) == set(plants(family))


@pytest.mark.parametrize("family", EXPECTED)
def test_the_header_says_test_data_and_what_each_plant_does(family):
    source = (PLANTED / EXPECTED[family][0]).read_text()
    header = "\n".join(line for line in itertools.takewhile(lambda s: s.startswith("//"), source.splitlines()))
    assert header.startswith("// TEST DATA WITH PLANTED BUGS: not a shipped kernel.")
    starts = sorted((header.index(f"{plant}=1"), plant) for plant in plants(family))  # each plant described
    for (start, plant), (end, _) in zip(starts, [*starts[1:], (len(header), "")]):
        said = header[start:end]  # from its name to the next plant's
        for word in HEADER_WORDS[(family, plant)]:
            assert word in said, (plant, word)


@needs_nvcc
@pytest.mark.parametrize(("family", "name"), cases())
def test_every_planted_variant_builds_for_sm90_without_spills(family, name):
    fam, loaded = planted(family)
    variant = next(v for v in loaded if v.name == name)
    result = build_variant(fam, variant, ARCH)
    assert result.error is None, result.error
    assert result.usage is not None and result.usage.registers > 0 and result.usage.shared_bytes > 0
    assert not result.usage.spills, result.usage


@needs_nvcc
@pytest.mark.parametrize(("family", "defines"), combinations(), ids=lambda x: x if isinstance(x, str) else
                         ",".join(f"{k}={v}" for k, v in x.items()))
def test_every_plant_combination_builds_without_spills(family, defines):
    fam, loaded = planted(family)
    result = build_variant(fam, loaded[0].with_defines(defines), ARCH)
    assert result.error is None, result.error
    assert result.usage is not None and not result.usage.spills, result.usage


def ptx(family: str, defines: dict[str, int]) -> str:
    flags = [f"-D{k}={v}" for k, v in defines.items()]
    done = subprocess.run(["nvcc", f"-arch={ARCH}", "-ptx", *flags, "-o", "-", str(PLANTED / EXPECTED[family][0])],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def barriers(text: str) -> int:
    return len(re.findall(r"^\s*(?:bar\.sync|barrier\.sync)\b", text, re.MULTILINE))


@needs_nvcc
@pytest.mark.parametrize("family", EXPECTED)
def test_the_barrier_plant_removes_exactly_one_barrier(family):
    off = {k: 0 for k in plants(family)}
    assert barriers(ptx(family, off)) == barriers(ptx(family, {**off, "PLANT_NO_BARRIER": 1})) + 1


@needs_nvcc
def test_the_swizzle_plant_changes_only_the_read_addresses():
    off = {k: 0 for k in plants("gemm_bf16")}
    ok, bad = ptx("gemm_bf16", off), ptx("gemm_bf16", {**off, "PLANT_WRONG_SWIZZLE": 1})
    assert ok != bad
    for instruction in ("cp.async.cg.shared.global", "ldmatrix", "mma.sync", "bar.sync"):
        assert ok.count(instruction) == bad.count(instruction), instruction
