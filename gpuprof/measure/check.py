"""Correctness: fresh random inputs, NaN-poisoned output, one run, compare with a float64 reference."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuprof.gpu import cupy
from gpuprof.results import OK, WRONG, CheckResult

# launch_for(inputs, out, size) -> launch(stream)
LaunchFactory = Callable[[dict[str, Any], Any, dict[str, int]], Callable[[Any], None]]


@dataclass
class Prepared:
    """Inputs and output left from the check at the benchmark size, reused for timing."""

    inputs: dict[str, Any]
    out: Any
    size: dict[str, int]


def scaled_error(out: Any, ref: Any, scale_by: str = "rms") -> tuple[float, int]:
    """(max |out - ref| / scale, count of NaN outputs).

    scale_by "rms" (the default): each element against max(|ref_i|, rms(ref)), which keeps
    outputs near zero (signed data) from blowing the relative error up, while one wrong element
    still shows (a norm would average it away). "element" (a family's ERROR_SCALE): each element
    against |ref_i| alone, for outputs that never cancel (prefix sums, softmax), so a wrong small
    element (an early scan tile) is not hidden under the rms of the large ones.
    """
    xp = np if isinstance(ref, np.ndarray) else cupy()  # NumPy too: the error models' CPU tests use it
    out64 = out.astype(xp.float64)
    not_written = int(xp.count_nonzero(xp.isnan(out64)))
    if scale_by == "element":
        scale = xp.maximum(xp.abs(ref), xp.finfo(xp.float64).tiny)  # ref_i = 0 needs out_i = 0 exactly
    else:
        rms = float(xp.sqrt(xp.mean(ref * ref))) if ref.size else 0.0
        scale = xp.maximum(xp.abs(ref), rms if rms > 0 else 1.0)
    err = xp.abs(out64 - ref) / scale
    worst = float(xp.nanmax(err)) if out.size > not_written else float("nan")
    return worst, not_written


def check_at(spec: Any, launch_for: LaunchFactory, size: dict[str, int], stream: Any,
             tolerance: float) -> tuple[float, list[str], Prepared]:
    """Run once at one size; (worst scaled error, reasons it is wrong, the buffers)."""
    inputs = spec.make_inputs(size, secrets.randbits(63))  # fresh inputs on every check
    out = spec.make_output(size)  # NaN-poisoned: unwritten elements cannot pass
    # Inputs and poison were made on CuPy's default stream; the timing stream does not wait for it.
    cupy().cuda.Device().synchronize()
    launch_for(inputs, out, size)(stream)
    stream.synchronize()
    ref = spec.reference(inputs, size)
    err, not_written = scaled_error(out, ref, getattr(spec, "ERROR_SCALE", "rms"))
    label = "x".join(str(v) for v in size.values())
    reasons = []
    if not_written:
        reasons.append(f"{label}: {not_written} of {out.size} outputs not written (still NaN)")
    elif not err <= tolerance:  # also catches NaN/inf errors
        reasons.append(f"{label}: error {err:.2e} > tolerance {tolerance:.0e}")
    del ref
    return err, reasons, Prepared(inputs, out, size)


def check_variant(spec: Any, variant: str, launch_for: LaunchFactory, sizes: list[dict[str, int]],
                  stream: Any) -> tuple[CheckResult, Prepared]:
    """Check at every size (the last one is the benchmark size); keep the last buffers for timing."""
    tolerance = 0.0
    worst = 0.0
    reasons: list[str] = []
    prepared = None
    for size in sizes:
        if prepared is not None:
            prepared = None  # free the previous size's buffers first
        tolerance = spec.tolerance(variant, size)  # may grow with the size (long sums)
        err, why, prepared = check_at(spec, launch_for, size, stream, tolerance)
        worst = max(worst, err) if err == err else float("nan")
        reasons += why
    if prepared is None:
        raise ValueError("check_variant needs at least one size")
    status = WRONG if reasons else OK
    return CheckResult(status=status, max_rel_error=worst, tolerance=tolerance,
                       sizes_checked=[dict(s) for s in sizes], reasons=reasons), prepared
