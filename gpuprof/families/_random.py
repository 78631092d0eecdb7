"""Where the families draw their random inputs: CuPy's generator on the device (fast at benchmark
sizes), or numpy's on the host, copied over, in a process that runs under compute-sanitizer.

Why the host there: CuPy's default generator sets up cuRAND XORWOW states with a kernel, and every
kernel a sanitizer sees is instrumented and checked, so input generation was a large share of each
`gpuprof sanitize` child's time while checking nothing of the course's code. Check sizes are small,
so drawing them with numpy costs milliseconds."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuprof.gpu import cupy

_on_host = False


def draw_on_host(enabled: bool = True) -> None:
    """From now on in this process, generator() draws with numpy and copies to the device."""
    global _on_host
    _on_host = enabled


def generator(seed: int) -> Any:
    """A generator with CuPy's Generator methods the families use (uniform, random, integers,
    standard_normal), returning device arrays."""
    return HostGenerator(seed) if _on_host else cupy().random.default_rng(seed)


class HostGenerator:
    """numpy's Generator behind CuPy's Generator methods; every result is a CuPy array."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None, dtype: Any = np.float64) -> Any:
        return cupy().asarray(self._rng.uniform(low, high, size).astype(dtype, copy=False))

    def random(self, size: Any = None, dtype: Any = np.float64) -> Any:
        return cupy().asarray(self._rng.random(size, dtype=np.dtype(dtype)))

    def standard_normal(self, size: Any = None, dtype: Any = np.float64) -> Any:
        return cupy().asarray(self._rng.standard_normal(size, dtype=np.dtype(dtype)))

    def integers(self, low: int, high: int | None = None, size: Any = None, dtype: Any = np.int64) -> Any:
        return cupy().asarray(self._rng.integers(low, high, size, dtype=np.dtype(dtype)))
