"""gpuprof: check, time, profile and sanitize CUDA kernel variants."""

__version__ = "0.1.0"
