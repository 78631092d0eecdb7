"""Host side of each family: inputs, reference, vendor versions, FLOP and byte counts.

gpuprof/families/<family>.py is the Python of the built-in folder kernels/<family>/ (its family.toml
names it as `host`) and provides the hooks of interface.FamilyModule; callers get any family's
through host(family), a FamilyHost that supplies the optional hooks' defaults. Families are found
by families/registry.py alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuprof.families.interface import FamilyHost, FamilyModule

if TYPE_CHECKING:
    # mypy checks each family module against FamilyModule (tests/families: none left out)
    from gpuprof.families import (
        attention_bf16,
        conv2d,
        fft,
        fused,
        gemm_bf16,
        gemm_fp16,
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
    from gpuprof.variants.catalog import Family

    _CONFORMING: tuple[FamilyModule, ...] = (attention_bf16, conv2d, fft, fused, gemm_bf16, gemm_fp16, histogram,
                                             matmul, mnist, reduce, scan, softmax, transfers, transpose, vecadd)


def host(family: Family) -> FamilyHost:
    """The host side of `family`, from its folder (families/registry.py: the manifest's `host`
    module, the folder's family.py, or its [op] table)."""
    from gpuprof.families import registry

    return registry.host_for(family)
