"""CUTLASS rows: the matmul family's SIMT SGEMM (kernels/matmul/vendor/cutlass_sgemm.cu) and the 16-bit
GEMM families' Hopper GEMM (kernels/gemm_bf16/vendor/cutlass_gemm_tn.cu, CUTLASS 3's TMA + wgmma
warp-specialised kernels, BF16 or FP16), built by nvcc against CUTLASS's headers on first use and
called through ctypes on gpuprof's timing stream. CUTLASS fixes the tile shape at compile time and
leaves the choice to its profiler, so a row runs the fastest of its file's configurations at the
problem's size, chosen before any timing from a few launches of each (as `cutlass_profiler` ranks them)."""

from __future__ import annotations

import ctypes
import logging
import statistics
from collections.abc import Callable
from typing import Any

from gpuprof.gpu import cupy

_TRIALS = 3  # timed launches per configuration when choosing, after one warm-up launch
log = logging.getLogger(__name__)

Call = Callable[[int, int], int]  # (configuration, stream pointer) -> CUTLASS's status


def _library() -> ctypes.CDLL:
    from gpuprof.families._cub import vendor_library
    from gpuprof.tools.cutlass_headers import cutlass_include, cutlass_version

    library = vendor_library("matmul", "cutlass_sgemm.cu", include_dirs=(cutlass_include(),),
                             headers_version=cutlass_version() or "")
    library.gpuprof_cutlass_sgemm.restype = ctypes.c_int
    library.gpuprof_cutlass_sgemm.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                              ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                              ctypes.c_void_p]
    library.gpuprof_cutlass_sgemm_configs.restype = ctypes.c_int
    library.gpuprof_cutlass_sgemm_name.restype = ctypes.c_char_p
    library.gpuprof_cutlass_sgemm_name.argtypes = [ctypes.c_int]
    return library


def _ranked(call: Call, count: int, name: Callable[[int], str]) -> list[tuple[int, str, float]]:
    """(config, name, median milliseconds) of each of `count` configurations that runs, fastest first
    (one warm-up launch, then _TRIALS timed ones on a private stream)."""
    cp = cupy()

    def milliseconds(config: int, stream: Any) -> float | None:
        if call(config, stream.ptr) != 0:  # CUTLASS refused this shape or the launch failed
            return None
        times = []
        for _ in range(_TRIALS):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            call(config, stream.ptr)
            stop.record(stream)
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop))
        return statistics.median(times)

    stream = cp.cuda.Stream(non_blocking=True)
    ranked = []
    for config in range(count):
        ms = milliseconds(config, stream)
        if ms is not None:
            ranked.append((config, name(config), ms))
    return sorted(ranked, key=lambda entry: entry[2])


def configurations(a: Any, b: Any, c: Any, m: int, n: int, k: int) -> tuple[Call, list[tuple[int, str, float]]]:
    """call(config, stream_ptr) -> status for c = a·b with the SIMT SGEMM, and (config, name, median
    milliseconds) of each configuration CUTLASS can run at m×n×k, fastest first."""
    library = _library()
    device = cupy().cuda.Device().id

    def call(config: int, stream_ptr: int) -> int:
        return int(library.gpuprof_cutlass_sgemm(device, config, a.data.ptr, b.data.ptr, c.data.ptr,
                                                 m, n, k, stream_ptr))

    return call, _ranked(call, library.gpuprof_cutlass_sgemm_configs(),
                         lambda config: library.gpuprof_cutlass_sgemm_name(config).decode())


def _launch_best(call: Call, ranked: list[tuple[int, str, float]], what: str) -> Callable[[Any], None]:
    """launch(stream) of the fastest ranked configuration; EnvironmentProblem when none runs."""
    from gpuprof.errors import EnvironmentProblem

    cp = cupy()
    if not ranked:
        raise EnvironmentProblem(f"CUTLASS could not run any of its {what} configurations")
    best, name, _ = ranked[0]
    log.info("CUTLASS %s: %s", what, name)

    def launch(stream: Any) -> None:
        status = call(best, stream.ptr)
        if status != 0:
            raise cp.cuda.runtime.CUDARuntimeError(status) if status > 0 else EnvironmentProblem(
                f"CUTLASS refused its {what} launch (status {status})")

    return launch


def cutlass_sgemm(a: Any, b: Any, c: Any, m: int, n: int, k: int) -> Callable[[Any], None]:
    """launch(stream) computing c = a·b with CUTLASS's fastest SIMT configuration at m×n×k; the
    library is built and the configuration chosen now, before any timing."""
    call, ranked = configurations(a, b, c, m, n, k)
    return _launch_best(call, ranked, f"SIMT SGEMM at {m}x{n}x{k}")


# CUTLASS 3's Hopper kernels: wgmma and TMA exist on sm_90a only. The flags are CUTLASS's own release
# build's: its cute:: helpers call constexpr host functions from host-device code, and with the device
# asserts left in, ptxas serialises the wgmmas (warning C7510: a call crosses the wgmma pipeline).
SM90_TARGET = "sm_90a"
SM90_FLAGS = ("-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG")


def _sm90_library(fp16: bool) -> ctypes.CDLL:
    from gpuprof.errors import EnvironmentProblem
    from gpuprof.tools.cutlass_headers import cutlass_include, cutlass_version
    from gpuprof.tools.nvcc_library import shared_library
    from gpuprof.variants.catalog import kernels_root

    include = cutlass_include()  # first: without headers, the row's one-line hint
    capability = cupy().cuda.Device().compute_capability
    if capability != "90":
        raise EnvironmentProblem(f"the CUTLASS row is CUTLASS's Hopper GEMM ({SM90_TARGET}); "
                                 f"this GPU is sm_{capability}")
    flags = (*SM90_FLAGS, *(("-DGEMM_ELEM_FP16",) if fp16 else ()))
    library = ctypes.CDLL(str(shared_library(kernels_root() / "gemm_bf16" / "vendor" / "cutlass_gemm_tn.cu",
                                             SM90_TARGET, include_dirs=(include,),
                                             headers_version=cutlass_version() or "", flags=flags)))
    library.gpuprof_cutlass_gemm.restype = ctypes.c_int
    library.gpuprof_cutlass_gemm.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                             ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                             ctypes.c_void_p, ctypes.c_void_p]
    library.gpuprof_cutlass_gemm_workspace.restype = ctypes.c_int
    library.gpuprof_cutlass_gemm_workspace.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                       ctypes.c_int, ctypes.POINTER(ctypes.c_size_t)]
    library.gpuprof_cutlass_gemm_configs.restype = ctypes.c_int
    library.gpuprof_cutlass_gemm_name.restype = ctypes.c_char_p
    library.gpuprof_cutlass_gemm_name.argtypes = [ctypes.c_int]
    return library


def cutlass_sm90_gemm(a: Any, b: Any, c: Any, m: int, n: int, k: int, *, fp16: bool) -> Callable[[Any], None]:
    """launch(stream) computing c = a·bᵀ (a: m×k, b: n×k, both row-major; BF16, or FP16 with fp16) with
    the fastest of CUTLASS's Hopper configurations at m×n×k; the library is built, the workspace
    allocated and the configuration chosen now, before any timing."""
    cp = cupy()
    library = _sm90_library(fp16)
    device = cp.cuda.Device().id
    count = library.gpuprof_cutlass_gemm_configs()
    needed = ctypes.c_size_t(0)
    workspace_bytes = 0
    for config in range(count):  # one workspace, the largest any runnable configuration needs
        if library.gpuprof_cutlass_gemm_workspace(device, config, m, n, k, ctypes.byref(needed)) == 0:
            workspace_bytes = max(workspace_bytes, needed.value)
    workspace = cp.empty(max(1, workspace_bytes), dtype=cp.uint8)

    def call(config: int, stream_ptr: int) -> int:
        return int(library.gpuprof_cutlass_gemm(device, config, a.data.ptr, b.data.ptr, c.data.ptr, m, n, k,
                                                workspace.data.ptr, stream_ptr))

    ranked = _ranked(call, count, lambda config: library.gpuprof_cutlass_gemm_name(config).decode())
    kind = "FP16" if fp16 else "BF16"
    return _launch_best(call, ranked, f"Hopper {kind} GEMM at {m}x{n}x{k}")
