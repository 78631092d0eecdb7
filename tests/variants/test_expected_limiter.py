"""The manifest's `expected_limiter`: a closed vocabulary ncu can check (docs/ladder.md), validated
with one line naming the file, the key and the choices; every hand-written variant of the families
the ladder is taught on states one, and no vendor variant does."""

from __future__ import annotations

import pytest

from gpuprof.errors import InputError
from gpuprof.variants import catalog

LADDER_FAMILIES = ("matmul", "reduce", "transpose")


def manifest(tmp_path, line: str):
    folder = tmp_path / "fam"
    folder.mkdir()
    (folder / "k.cu").write_text('extern "C" __global__ void fam_k(float* x, int n) {}\n')
    (folder / "family.toml").write_text(
        'family = "fam"\nsummary = "s"\nsignature = "float* x, int n"\nbaseline = "k"\ndims = ["n"]\n'
        'grid_dims = ["n"]\ndefault_size = { n = 1024 }\ncheck_sizes = [{ n = 7 }]\n\n'
        '[[variant]]\nname = "k"\nfile = "k.cu"\nkernel = "fam_k"\ntechnique = "t"\n'
        f'block = [256]\ntile = [256]\n{line}\n')
    return folder / "family.toml"


@pytest.mark.parametrize("limiter", catalog.LIMITERS)
def test_each_limiter_of_the_vocabulary_parses(tmp_path, limiter):
    family = catalog.parse_manifest(manifest(tmp_path, f'expected_limiter = "{limiter}"'))
    assert family.variant("k").expected_limiter == limiter


def test_the_key_is_optional(tmp_path):
    assert catalog.parse_manifest(manifest(tmp_path, "")).variant("k").expected_limiter is None


def test_an_unknown_limiter_is_one_line_naming_the_choices(tmp_path):
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(manifest(tmp_path, 'expected_limiter = "shared memory"'))
    message = info.value.message
    assert "\n" not in message
    assert "'expected_limiter' is 'shared memory'; choose from: dram, l2, l1, compute, latency" in message


@pytest.mark.parametrize("name", LADDER_FAMILIES)
def test_every_hand_written_variant_states_its_limiter(name):
    family = catalog.load_family(name)
    missing = [v.name for v in family.variants if not v.vendor and v.expected_limiter is None]
    assert not missing, f"{name}: no expected_limiter for {missing}"
    assert all(v.expected_limiter is None for v in family.variants if v.vendor)
