"""--kernels-dir DIR and a suite's kernels_dir: a folder of the user's variants with its own manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.commands.suite import case_variants, load
from gpuprof.variants import catalog
from gpuprof.variants.user import AddSpec, add_to_family, load_kernels_dir

FAULTY = Path(__file__).resolve().parents[1] / "kernels" / "faulty"
SUITE = Path(__file__).resolve().parents[1] / "suites" / "faulty.toml"


def test_the_folder_adds_its_variants_to_the_family():
    family = catalog.load_family("vecadd")
    variants = load_kernels_dir(FAULTY, family)
    assert [v.name for v in variants] == ["illegal_address", "infinite_loop", "wrong"]
    assert all(v.user and v.file.is_file() and v.block_dims() == (256, 1, 1) for v in variants)
    assert variants[2].file.resolve() == (FAULTY.parent / "vecadd_wrong.cu").resolve()  # paths relative to DIR
    widened, extra = add_to_family(family, AddSpec(None, kernels_dir=FAULTY))
    assert widened.variant_names == family.variant_names + ["illegal_address", "infinite_loop", "wrong"]
    assert extra == variants


def test_a_family_without_a_manifest_in_the_folder_gets_nothing():
    assert load_kernels_dir(FAULTY, catalog.load_family("matmul")) == []


def test_the_child_process_gets_the_folder_again():
    args = AddSpec(None, kernels_dir=FAULTY).cli_args()
    assert args == ["--kernels-dir", str(FAULTY)]
    both = AddSpec(FAULTY / "infinite_loop.cu", kernels_dir=FAULTY).cli_args()
    assert both == ["--kernels-dir", str(FAULTY), "--add", str(FAULTY / "infinite_loop.cu")]


def test_a_suite_names_the_folders_variants():
    suite = load(SUITE)
    assert suite.kernels_dir == FAULTY
    vecadd, matmul = suite.cases
    assert "infinite_loop" in vecadd.variants
    assert [v.name for v in case_variants(suite, vecadd)] == ["illegal_address", "infinite_loop", "wrong"]
    assert case_variants(suite, matmul) == []


def test_a_suite_without_the_folder_does_not_know_those_variants(tmp_path):
    text = SUITE.read_text().replace('kernels_dir = "../kernels/faulty"\n', "")
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(Exception, match="unknown vecadd variant 'illegal_address'"):
        load(tmp_path / "s.toml")


def test_a_triton_variant_can_live_in_the_folder_too(tmp_path):
    source = (catalog.load_family("vecadd").variant("triton").file).read_text()
    (tmp_path / "my_triton.py").write_text(source)
    (tmp_path / "vecadd.toml").write_text('[[variant]]\nname = "my_triton"\nlanguage = "triton"\n'
                                          'file = "my_triton.py"\ntechnique = "my Triton add"\n')
    (variant,) = load_kernels_dir(tmp_path, catalog.load_family("vecadd"))
    assert variant.is_triton and variant.user and variant.file == tmp_path / "my_triton.py"
