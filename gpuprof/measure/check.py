"""Correctness: fresh random inputs, NaN-poisoned output, one run, compare with a float64 reference."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


def scaled_error(out: Any, ref: Any) -> tuple[float, int]:
    """(max |out - ref| / max(|ref|, rms(ref)), count of NaN outputs).

    Scaling each element by max(|ref_i|, rms(ref)) keeps outputs near zero from blowing the
    relative error up, while one wrong element still shows (a norm would average it away).
    """
    cp = cupy()
    out64 = out.astype(cp.complex128 if cp.iscomplexobj(out) else cp.float64)  # complex: FFT outputs
    not_written = int(cp.count_nonzero(cp.isnan(out64)))
    rms = float(cp.sqrt(cp.mean(cp.abs(ref) ** 2))) if ref.size else 0.0
    scale = cp.maximum(cp.abs(ref), rms if rms > 0 else 1.0)
    err = cp.abs(out64 - ref) / scale
    worst = float(cp.nanmax(err)) if out.size > not_written else float("nan")
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
    err, not_written = scaled_error(out, ref)
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
