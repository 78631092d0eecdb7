"""Host side of each family: inputs, reference, vendor versions, FLOP and byte counts.

gpuprof/families/<family>.py goes with kernels/<family>/family.toml and provides the hooks of
interface.FamilyModule; callers get it through host(family), a FamilyHost that supplies the
optional hooks' defaults.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, cast

from gpuprof.errors import UsageError
from gpuprof.families.interface import FamilyHost, FamilyModule

if TYPE_CHECKING:  # mypy checks each family module against FamilyModule (tests/families: none left out)
    from gpuprof.families import (
        conv2d,
        fft,
        fused,
        histogram,
        matmul,
        mnist,
        reduce,
        scan,
        softmax,
        transfers,
        transpose,
        vecadd,
    )

    _CONFORMING: tuple[FamilyModule, ...] = (conv2d, fft, fused, histogram, matmul, mnist, reduce, scan, softmax,
                                             transfers, transpose, vecadd)


def host(family: str) -> FamilyHost:
    """The host side of `family` (gpuprof/families/<family>.py)."""
    if not family.isidentifier():
        raise UsageError(f"family '{family}' is not a valid name")
    try:
        module = importlib.import_module(f"gpuprof.families.{family}")
    except ModuleNotFoundError:
        raise UsageError(f"family '{family}' has no host-side module gpuprof/families/{family}.py") from None
    return FamilyHost(cast(FamilyModule, module))  # a module found by name: checked above and by the tests
