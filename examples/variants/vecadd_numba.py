"""vecadd with Numba CUDA, as a gpuprof variant:

    gpuprof run vecadd --variants grid --add examples/variants/vecadd_numba.py

Numba has no "current stream": the launch names gpuprof's stream with cuda.external_stream(ptr)
(else Numba launches on the default stream, and gpuprof's off-stream audit marks the row
IMPOSSIBLE). The family's CuPy buffers are Numba device arrays without a copy
(__cuda_array_interface__). Numba compiles at the first launch."""

from __future__ import annotations

from typing import Any

from numba import cuda

THREADS = 256


@cuda.jit
def vecadd_kernel(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    a, b, c = (cuda.as_cuda_array(x) for x in (inputs["a"], inputs["b"], out))
    blocks = (size["n"] + THREADS - 1) // THREADS
    streams: dict[int, Any] = {}  # one Numba stream object per gpuprof stream

    def launch(stream: Any) -> None:
        on = streams.setdefault(stream.ptr, cuda.external_stream(stream.ptr))
        vecadd_kernel[blocks, THREADS, on](a, b, c)

    return launch
