"""The histogram's CUB row is host code built by nvcc into a shared library once and reused; this
builds it for sm_90 without a GPU and loads it (the GPU test checks and times the row)."""

from __future__ import annotations

import ctypes

import pytest

from gpuprof.errors import EnvironmentProblem
from gpuprof.tools import nvcc_library
from gpuprof.variants.catalog import kernels_root

SOURCE = kernels_root() / "histogram" / "vendor" / "cub_histogram.cu"


@pytest.mark.nvcc
def test_the_cub_library_builds_once_and_exports_its_entry_point(tmp_path, monkeypatch):
    monkeypatch.setattr(nvcc_library, "CACHE_DIR", tmp_path)
    built = nvcc_library.shared_library(SOURCE, "sm_90")
    assert built.parent == tmp_path / "libs" and built.suffix == ".so"
    assert hasattr(ctypes.CDLL(str(built)), "gpuprof_cub_histogram_even_u8")
    stamp = built.stat().st_mtime_ns
    assert nvcc_library.shared_library(SOURCE, "sm_90") == built and built.stat().st_mtime_ns == stamp  # reused
    assert not list(tmp_path.glob("libs/*.partial"))


@pytest.mark.nvcc
def test_a_source_nvcc_rejects_is_one_environment_line_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(nvcc_library, "CACHE_DIR", tmp_path)
    bad = tmp_path / "bad.cu"
    bad.write_text("this is not C++\n")
    with pytest.raises(EnvironmentProblem, match="nvcc could not build bad.cu for sm_90"):
        nvcc_library.shared_library(bad, "sm_90")
    assert not list((tmp_path / "libs").iterdir())
