"""CUTLASS's SIMT SGEMM as the matmul family's CUTLASS row: kernels/matmul/vendor/cutlass_sgemm.cu,
built by nvcc against CUTLASS's headers on first use and called through ctypes on gpuprof's timing
stream. CUTLASS fixes the tile shape at compile time and leaves the choice to its profiler, so the
row runs the fastest of the file's tile configurations at the problem's size, chosen before any
timing from a few launches of each (as `cutlass_profiler --kernels=sgemm` ranks them)."""

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


def configurations(a: Any, b: Any, c: Any, m: int, n: int, k: int) -> tuple[Call, list[tuple[int, str, float]]]:
    """call(config, stream_ptr) -> status for c = a·b, and (config, name, median milliseconds) of each
    configuration CUTLASS can run at m×n×k, fastest first (one warm-up launch, then _TRIALS timed
    ones on a private stream)."""
    cp = cupy()
    library = _library()
    device = cp.cuda.Device().id

    def call(config: int, stream_ptr: int) -> int:
        return int(library.gpuprof_cutlass_sgemm(device, config, a.data.ptr, b.data.ptr, c.data.ptr,
                                                 m, n, k, stream_ptr))

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
    for config in range(library.gpuprof_cutlass_sgemm_configs()):
        ms = milliseconds(config, stream)
        if ms is not None:
            ranked.append((config, library.gpuprof_cutlass_sgemm_name(config).decode(), ms))
    return call, sorted(ranked, key=lambda entry: entry[2])


def cutlass_sgemm(a: Any, b: Any, c: Any, m: int, n: int, k: int) -> Callable[[Any], None]:
    """launch(stream) computing c = a·b with CUTLASS's fastest SIMT configuration at m×n×k; the
    library is built and the configuration chosen now, before any timing."""
    from gpuprof.errors import EnvironmentProblem

    cp = cupy()
    call, ranked = configurations(a, b, c, m, n, k)
    if not ranked:
        raise EnvironmentProblem(f"CUTLASS could not run any of its SIMT SGEMM configurations at {m}x{n}x{k}")
    best, name, _ = ranked[0]
    log.info("CUTLASS SGEMM at %dx%dx%d: %s", m, n, k, name)

    def launch(stream: Any) -> None:
        status = call(best, stream.ptr)
        if status != 0:
            raise cp.cuda.runtime.CUDARuntimeError(status) if status > 0 else EnvironmentProblem(
                f"CUTLASS refused its SGEMM launch (status {status})")

    return launch
