"""Host side of each family: inputs, reference, vendor versions, FLOP and byte counts."""

from __future__ import annotations

from types import ModuleType

from gpuprof.errors import UsageError
from gpuprof.families import matmul, vecadd

# Each module provides: RATE ("flop" or "bytes"), make_inputs(size, seed), make_output(size),
# kernel_args(inputs, out, size), reference(inputs, size), vendor_launch(name, inputs, out, size),
# flop(size), bytes_moved(size), tolerance(variant_name).
SPECS: dict[str, ModuleType] = {"vecadd": vecadd, "matmul": matmul}


def spec(family: str) -> ModuleType:
    try:
        return SPECS[family]
    except KeyError:
        raise UsageError(f"family '{family}' has no host-side spec in gpuprof.families") from None
