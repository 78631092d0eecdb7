"""The matmul family's CUTLASS row: CUTLASS's headers are found (CUTLASS_PATH first, then the
nvidia-cutlass wheel), its SIMT SGEMM builds for sm_90 without a GPU and exports the entry points
the family calls, and a machine without the headers gets one line saying how to get them."""

from __future__ import annotations

import ctypes
import importlib.util

import pytest

from gpuprof.errors import EnvironmentProblem
from gpuprof.tools import cutlass_headers, nvcc_library
from gpuprof.variants.catalog import kernels_root

SOURCE = kernels_root() / "matmul" / "vendor" / "cutlass_sgemm.cu"
HAVE_WHEEL = importlib.util.find_spec("cutlass_library") is not None
needs_headers = pytest.mark.skipif(not HAVE_WHEEL, reason="no nvidia-cutlass wheel (gpuprof[cutlass])")


def test_cutlass_path_names_a_checkout_and_its_version_is_read_from_its_headers(tmp_path, monkeypatch):
    header = tmp_path / "include" / "cutlass"
    header.mkdir(parents=True)
    (header / "cutlass.h").write_text("#pragma once\n")
    (header / "version.h").write_text("#define CUTLASS_MAJOR 3\n#define CUTLASS_MINOR 9\n#define CUTLASS_PATCH 2 \n")
    monkeypatch.setenv("CUTLASS_PATH", str(tmp_path))
    assert cutlass_headers.cutlass_include() == tmp_path / "include"
    assert cutlass_headers.cutlass_version() == "3.9.2"


def test_no_headers_anywhere_is_one_environment_line_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLASS_PATH", str(tmp_path))  # a folder with no include/cutlass
    monkeypatch.setattr(cutlass_headers.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EnvironmentProblem, match=r"pip install 'gpuprof\[cutlass\]'.*CUTLASS_PATH"):
        cutlass_headers.cutlass_include()
    assert cutlass_headers.cutlass_version() is None


@needs_headers
def test_the_wheel_ships_the_headers_and_a_version(monkeypatch):
    monkeypatch.delenv("CUTLASS_PATH", raising=False)
    include = cutlass_headers.cutlass_include()
    assert (include / "cutlass" / "gemm" / "device" / "gemm.h").is_file()
    version = cutlass_headers.cutlass_version() or ""
    assert len(version.split(".")) == 3 and int(version.split(".")[0]) >= 3, version


@pytest.mark.nvcc
@needs_headers
def test_the_cutlass_sgemm_library_builds_for_sm90_with_every_configuration_named(tmp_path, monkeypatch):
    monkeypatch.delenv("CUTLASS_PATH", raising=False)
    monkeypatch.setattr(nvcc_library, "CACHE_DIR", tmp_path)
    include = cutlass_headers.cutlass_include()
    built = nvcc_library.shared_library(SOURCE, "sm_90", include_dirs=(include,),
                                        headers_version=cutlass_headers.cutlass_version() or "")
    library = ctypes.CDLL(str(built))
    assert hasattr(library, "gpuprof_cutlass_sgemm")
    library.gpuprof_cutlass_sgemm_name.restype = ctypes.c_char_p
    count = library.gpuprof_cutlass_sgemm_configs()
    names = [library.gpuprof_cutlass_sgemm_name(i).decode() for i in range(count)]
    assert count >= 4 and all(name.startswith("cutlass_simt_sgemm_") for name in names), names
    assert len(set(names)) == count
    assert library.gpuprof_cutlass_sgemm_name(count) == b""  # out of range: no name, no crash


def test_the_matmul_manifest_has_a_cutlass_vendor_row_the_family_dispatches():
    from gpuprof.families import matmul
    from gpuprof.variants import catalog

    row = catalog.load_family("matmul").variant("cutlass")
    assert row.vendor and row.call == matmul.CUTLASS_CALL
    assert "gpuprof_cutlass_sgemm" in SOURCE.read_text()


@pytest.mark.nvcc
def test_new_header_versions_build_a_new_library_never_a_stale_one(tmp_path, monkeypatch):
    monkeypatch.setattr(nvcc_library, "CACHE_DIR", tmp_path)
    source = tmp_path / "tiny.cu"
    source.write_text('extern "C" int gpuprof_tiny() { return 7; }\n')
    first = nvcc_library.shared_library(source, "sm_90", include_dirs=(tmp_path,), headers_version="4.2.0")
    second = nvcc_library.shared_library(source, "sm_90", include_dirs=(tmp_path,), headers_version="4.3.0")
    assert first != second and first.is_file() and second.is_file()
    assert ctypes.CDLL(str(second)).gpuprof_tiny() == 7
