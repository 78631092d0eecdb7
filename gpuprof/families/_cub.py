"""CUB's device-wide algorithms as a CUDA programmer calls them from host code: a small .cu beside a
family's kernels (kernels/<family>/vendor/), built by nvcc into a shared library on first use
(tools/nvcc_library.py; vendor_library, which the CUTLASS row shares) and called through ctypes on
gpuprof's timing stream. Each entry point takes the device, the buffers, n, the workspace and its
size (CUB's two-call convention: a null workspace only writes the size) and the stream, and returns
the cudaError_t."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuprof.gpu import cupy

# (device, in, out, n, temp, temp_bytes*, stream)
_ARGTYPES = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
             ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p]


def vendor_library(family: str, source: str, include_dirs: tuple[Path, ...] = (),
                   headers_version: str = "") -> ctypes.CDLL:
    """kernels/<family>/vendor/<source> built by nvcc for this GPU (once, then cached) and loaded."""
    from gpuprof.tools.nvcc_library import shared_library
    from gpuprof.variants.catalog import kernels_root

    arch = f"sm_{cupy().cuda.Device().compute_capability}"
    return ctypes.CDLL(str(shared_library(kernels_root() / family / "vendor" / source, arch,
                                          include_dirs=include_dirs, headers_version=headers_version)))


def cub_call(family: str, source: str, symbol: str, src: Any, dst: Any, n: int) -> Callable[[Any], None]:
    """launch(stream) running `symbol` of kernels/<family>/vendor/<source> from src into dst; the
    library is built, loaded and its workspace allocated now, before any timing."""
    from gpuprof.errors import EnvironmentProblem

    if n >= 2**31:
        raise EnvironmentProblem(f"the CUB row takes an int n: n must be below 2^31, not {n}")
    cp = cupy()
    device = cp.cuda.Device()
    library = vendor_library(family, source)
    entry = getattr(library, symbol)
    entry.restype, entry.argtypes = ctypes.c_int, _ARGTYPES
    temp_bytes = ctypes.c_size_t(0)

    def call(temp: int, stream_ptr: int) -> None:
        status = entry(device.id, src.data.ptr, dst.data.ptr, n, temp, ctypes.byref(temp_bytes), stream_ptr)
        if status != 0:
            raise cp.cuda.runtime.CUDARuntimeError(status)

    call(0, 0)  # the workspace size only: no work is queued
    workspace = cp.empty(max(1, temp_bytes.value), dtype=cp.uint8)

    def launch(stream: Any) -> None:
        call(workspace.data.ptr, stream.ptr)

    return launch
