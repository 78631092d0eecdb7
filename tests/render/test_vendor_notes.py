"""Each vendor row's footnote names its library, the version the run recorded, and the call."""

from __future__ import annotations

import pytest

from gpuprof.render.vendor_notes import library, vendor_line

ENV = {"libraries": {"cub": "3.0.1", "cutlass": "4.2.0", "cufft": "12000"}, "torch_version": "2.11.0+cu130",
       "cupy_version": "14.0.1", "cuda_runtime": "13.0"}


@pytest.mark.parametrize(("call", "words"), [
    ("cub.DeviceHistogram.HistogramEven", "CUB 3.0.1 (the CUDA toolkit's headers, built by nvcc)"),
    ("cupy.cuda.cub.device_histogram", "CuPy 14.0.1's binding"),
    ("cutlass.gemm.device.Gemm.simt", "CUTLASS 4.2.0 (its headers, built by nvcc)"),
    ("cufft.Plan1d.C2C", "cuFFT 12000 through CuPy 14.0.1"),
    ("cudnn.convolution", "cuDNN through PyTorch 2.11.0+cu130"),
    ("torch.matmul.tf32", "cuBLAS through PyTorch 2.11.0+cu130"),
    ("torch.cumsum", "PyTorch 2.11.0+cu130"),
    ("cudaMemcpyAsync", "the CUDA runtime 13.0"),
])
def test_every_call_the_manifests_use_names_its_library(call, words):
    assert library(call, ENV) == words


def test_a_file_from_before_the_versions_were_recorded_says_it_does_not_know():
    assert library("cub.DeviceScan.InclusiveSum", {}) == "CUB ? (the CUDA toolkit's headers, built by nvcc)"
    assert vendor_line([], ENV) is None
    assert vendor_line([("cub", "cub.DeviceScan.InclusiveSum")], ENV) == (
        "vendor rows: cub = cub.DeviceScan.InclusiveSum, CUB 3.0.1 (the CUDA toolkit's headers, built by nvcc)")


def test_every_manifest_call_is_one_the_footnote_knows():
    from gpuprof.variants import catalog

    calls = {v.call for name in catalog.family_names() for v in catalog.load_family(name).variants if v.call}
    assert calls and all(library(call, ENV) != call.split(".", 1)[0] for call in calls), calls


@pytest.mark.nvcc
def test_the_cub_version_is_what_the_toolkits_nvcc_preprocesses():
    from gpuprof.fingerprint import cub_version

    version = cub_version()
    assert version is not None and version.count(".") == 2 and int(version.split(".")[0]) >= 2
