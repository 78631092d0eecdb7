"""Host side of each family: inputs, reference, vendor versions, FLOP and byte counts.

gpuprof/families/<family>.py goes with kernels/<family>/family.toml. Each module provides:
RATE ("flop" or "bytes"), FORMULA (how the rate is computed, printed under the run table),
make_inputs(size, seed), make_output(size), kernel_args(inputs, out, size), reference(inputs, size),
vendor_launch(name, inputs, out, size), flop(size), bytes_moved(size), tolerance(variant_name, size).
Optional: plan(variant, functions, inputs, out, size, ctx) -> launch(stream), for variants that
launch several kernels or need workspace; it replaces the one-kernel launch from the manifest
(ctx.grid / ctx.block are the manifest's geometry, ctx.sm_count the device's).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from gpuprof.errors import UsageError


def spec(family: str) -> ModuleType:
    if not family.isidentifier():
        raise UsageError(f"family '{family}' is not a valid name")
    try:
        return importlib.import_module(f"gpuprof.families.{family}")
    except ModuleNotFoundError:
        raise UsageError(f"family '{family}' has no host-side module gpuprof/families/{family}.py") from None
