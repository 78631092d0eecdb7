"""The CUB vendor rows (histogram, scan, reduce) are host code built by nvcc into a shared library
once and reused; this builds each for sm_90 without a GPU and loads it (the GPU tests check and
time the rows), and checks that every family's manifest call reaches its entry point."""

from __future__ import annotations

import ctypes

import pytest

from gpuprof.errors import EnvironmentProblem
from gpuprof.tools import nvcc_library
from gpuprof.variants.catalog import kernels_root

LIBRARIES = [("histogram", "cub_histogram.cu", "gpuprof_cub_histogram_even_u8"),
             ("scan", "cub_scan.cu", "gpuprof_cub_inclusive_sum_f32"),
             ("reduce", "cub_reduce.cu", "gpuprof_cub_sum_f32")]


@pytest.mark.nvcc
@pytest.mark.parametrize(("family", "source", "symbol"), LIBRARIES)
def test_each_cub_library_builds_once_and_exports_its_entry_point(tmp_path, monkeypatch, family, source, symbol):
    monkeypatch.setattr(nvcc_library, "CACHE_DIR", tmp_path)
    path = kernels_root() / family / "vendor" / source
    built = nvcc_library.shared_library(path, "sm_90")
    assert built.parent == tmp_path / "libs" and built.suffix == ".so"
    assert hasattr(ctypes.CDLL(str(built)), symbol)
    stamp = built.stat().st_mtime_ns
    assert nvcc_library.shared_library(path, "sm_90") == built and built.stat().st_mtime_ns == stamp  # reused
    assert not list(tmp_path.glob("libs/*.partial"))


@pytest.mark.parametrize(("family", "source", "symbol"), LIBRARIES)
def test_the_vendor_reference_of_each_cub_family_is_the_direct_cub_call(family, source, symbol):
    from gpuprof.variants import catalog

    fam = catalog.load_family(family)
    cub = fam.variant(fam.vendor_reference)
    assert cub.vendor and cub.call is not None and cub.call.startswith("cub.")
    assert symbol in (kernels_root() / family / "vendor" / source).read_text()


@pytest.mark.nvcc
def test_a_source_nvcc_rejects_is_one_environment_line_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(nvcc_library, "CACHE_DIR", tmp_path)
    bad = tmp_path / "bad.cu"
    bad.write_text("this is not C++\n")
    with pytest.raises(EnvironmentProblem, match="nvcc could not build bad.cu for sm_90"):
        nvcc_library.shared_library(bad, "sm_90")
    assert not list((tmp_path / "libs").iterdir())
