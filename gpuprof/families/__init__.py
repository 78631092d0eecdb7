"""Host side of each family: inputs, reference, vendor versions, FLOP and byte counts.

gpuprof/families/<family>.py goes with kernels/<family>/family.toml. Each module provides:
RATE ("flop", "bytes", or "link": bytes across the host link, judged against its bandwidth),
FORMULA (how the rate is computed, printed under the run table),
make_inputs(size, seed), make_output(size), kernel_args(inputs, out,
size), reference(inputs, size), vendor_launch(call, inputs, out, size) (call: the vendor
variant's `call` key), flop(size), bytes_moved(size), tolerance(variant, size) (variant: the
catalogue's Variant; the bound comes from the module's documented error model, the variant's
`precision` and `error_model`).
Optional: plan(variant, functions, inputs, out, size, ctx) -> launch(stream), for variants that
launch several kernels or need workspace; it replaces the one-kernel launch from the manifest
(ctx.grid / ctx.block are the manifest's geometry, ctx.sm_count the device's). PLANS and
ERROR_MODELS: the values the manifest's `plan` and `error_model` may take, the first the default.
notes(rows, family, measured) -> lines printed under the run table (a figure across rows).
ERROR_SCALE = "element" checks each output against its own reference value (default "rms": against
max(|ref_i|, rms(ref))).
scaled_error(out, ref, size) -> (error, NaN count), when present, replaces the check's own scaling
(an output made of parts on different scales: mnist's loss, gradients and updated weights).
Per-variant behaviour comes from the manifest's keys, never from a variant's name
(tests/test_manifest_keys.py renames every variant and checks that nothing changes).
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
