"""NVTX ranges family -> variant around every launch, so ncu can select exactly one variant.

Each level is its own push/pop range (never 'family/variant' in one name: a '/' inside a
name breaks ncu's --nvtx-include 'family/variant/' nesting syntax). Select with
`ncu --nvtx --nvtx-include 'matmul/naive/'`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gpuprof.errors import UsageError


def _push_pop() -> tuple[Callable[[str], Any], Callable[[], Any]]:
    try:
        import nvtx

        return (lambda name: nvtx.push_range(name, domain=None)), (lambda: nvtx.pop_range(domain=None))
    except ImportError:  # CuPy ships NVTX bindings too; same ranges, default domain
        from cupy.cuda import nvtx as cupy_nvtx

        return cupy_nvtx.RangePush, cupy_nvtx.RangePop


_push, _pop = None, None


def check_name(name: str) -> str:
    if "/" in name or not name:
        raise UsageError(f"name {name!r} cannot be an NVTX range: it must be non-empty and have no '/'")
    return name


@contextmanager
def nested(*names: str) -> Iterator[None]:
    global _push, _pop
    if _push is None:
        _push, _pop = _push_pop()
    for name in names:
        _push(check_name(name))
    try:
        yield
    finally:
        for _ in names:
            _pop()


def ranged(launch: Callable[[Any], None], family: str, variant: str) -> Callable[[Any], None]:
    """The same launch, inside family -> variant ranges."""

    def wrapped(stream: Any) -> None:
        with nested(family, variant):
            launch(stream)

    return wrapped
