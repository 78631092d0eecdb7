"""Correctness: fresh random inputs, NaN-poisoned output, several launches, compare with a float64 reference.

Every check size launches the variant CHECK_LAUNCHES times on the same inputs and judges every
launch: an intermittent race (a decoupled look-back scan, atomics) passes a single launch whenever
that launch happens to be right (numbers audit C5). Before each relaunch the output is poisoned
again and an in-place family's inputs are restored, so each launch starts where the first did.
The float64 reference is computed once per size (it is the expensive part); the worst error over
the launches is the one recorded. A family whose launch is very slow may ask for fewer launches
(`check_launches` in its family.toml).

The reference is computed from a copy of the inputs taken before the first launch, and the inputs
are compared with that copy after the last: a kernel that changes its inputs (say, zeroes them and
writes zeros) cannot pass against its own mutation. After timing, the output of the last timed
launch is checked again (recheck_after_timing), so a kernel that only works on its first calls is
caught there too.

Between the check and the timed launches, and again after timing, the inputs get new random values
in the same arrays (refresh_inputs): a kernel that remembers what it computed for its buffers (a
cache keyed on their addresses, filled on its first launch) returns the old result for the new
values, and the launch on the values refreshed after timing (check_on_new_values) is judged against
a reference of those values. New buffers with new values are what each check size already gets."""

from __future__ import annotations

import dataclasses
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuprof.families.interface import FamilyHost
from gpuprof.gpu import cupy
from gpuprof.results import OK, WRONG, CheckResult, size_label

# launch_for(inputs, out, size) -> launch(stream)
LaunchFactory = Callable[[dict[str, Any], Any, dict[str, int]], Callable[[Any], None]]

# Launches judged per check size (a family's `check_launches` may ask for fewer): an intermittent
# race has three chances to show instead of one.
CHECK_LAUNCHES = 3


@dataclass
class Prepared:
    """Inputs and output left from the check at the benchmark size, reused for timing; pristine
    holds the inputs as they were before any launch (the reference is computed from them)."""

    inputs: dict[str, Any]
    out: Any
    size: dict[str, int]
    pristine: dict[str, Any] = field(default_factory=dict)
    tolerance: float = 0.0


def snapshot(inputs: dict[str, Any]) -> dict[str, Any]:
    """A copy of every input array (on the device, or on the host for host inputs), taken before
    the variant sees them."""
    return {name: value.copy() for name, value in inputs.items() if hasattr(value, "copy")}


def changed_inputs(inputs: dict[str, Any], pristine: dict[str, Any]) -> list[str]:
    """Names of the inputs whose bytes differ from their pristine copy (NaN-safe: bitwise)."""
    changed = []
    for name, before in pristine.items():
        now = inputs[name]
        if now.shape != before.shape or now.dtype != before.dtype:
            changed.append(name)
            continue
        xp = np if isinstance(now, np.ndarray) else cupy()  # host inputs too (the transfers family)
        as_bytes = [xp.ascontiguousarray(x).reshape(-1).view(xp.uint8) for x in (now, before)]
        if not bool(xp.array_equal(*as_bytes)):
            changed.append(name)
    return changed


def settle(stream: Any) -> None:
    """Wait for the stream, then for the whole device: work a variant put on another stream than
    the one it was given is finished too before its output is judged (the timing audit in
    measure/integrity.py names such a variant; the check must not read a half-written output)."""
    stream.synchronize()
    cupy().cuda.Device().synchronize()


def repoison(host: FamilyHost, prepared: Prepared) -> None:
    """Fill the output with the family's poison again, so timing starts from an unwritten output."""
    poison_output(host, prepared.out, prepared.size)


def refresh_inputs(host: FamilyHost, prepared: Prepared) -> None:
    """New random values into the same input arrays (the launch closure holds them, and a cache keyed
    on their addresses must see the same pointers), the pristine copy taken again, the output
    poisoned. The old pristine copy is dropped first: at most one extra set of inputs is alive."""
    prepared.pristine = {}
    fresh = host.make_inputs(prepared.size, secrets.randbits(63))
    cupy().cuda.Device().synchronize()  # made on the default stream
    for name, value in fresh.items():
        if name in prepared.inputs:
            _write_into(prepared.inputs[name], value)
    del fresh
    prepared.pristine = snapshot(prepared.inputs)
    poison_output(host, prepared.out, prepared.size)


def _write_into(target: Any, value: Any) -> None:
    """value's contents into target in place: an array, or a dataclass of arrays (mnist's pinned
    host batch, which each step copies to the device, must change with its device twin)."""
    if hasattr(target, "shape") and hasattr(value, "shape"):
        target[...] = value
    elif dataclasses.is_dataclass(target) and not isinstance(target, type):
        for item in dataclasses.fields(target):
            _write_into(getattr(target, item.name), getattr(value, item.name))


def check_on_new_values(host: FamilyHost, prepared: Prepared, launch_for: LaunchFactory, stream: Any) -> list[str]:
    """After timing: the inputs refreshed in place, one more launch, judged against a reference of the
    new values. A kernel that replays results it computed before (keyed on its buffers) is WRONG here.
    The launch closure is made again on the same buffers: what a closure prepares once from the inputs
    (a vendor row's copy of in^T, managed copies of host inputs) is the untimed set-up, made anew."""
    refresh_inputs(host, prepared)
    launch = launch_for(prepared.inputs, prepared.out, prepared.size)
    launch(stream)
    settle(stream)
    label = size_label(prepared.size)
    _err, why = judge(host, prepared.out, prepared.pristine, prepared.size, prepared.tolerance, label)
    return [f"wrong on new input values in the same buffers after timing: {reason.removeprefix(label + ': ')} "
            "(does it reuse a result computed for earlier inputs?)" for reason in why]


def poison_output(host: FamilyHost, out: Any, size: dict[str, int]) -> None:
    """The family's poison (NaN) into the existing output array, which the launch closure holds."""
    out[...] = host.make_output(size)
    cupy().cuda.Device().synchronize()  # made on the default stream; the launch's stream does not wait


def scaled_error(out: Any, ref: Any, scale_by: str = "rms") -> tuple[float, int]:
    """(max |out - ref| / scale, count of NaN outputs).

    scale_by "rms" (the default): each element against max(|ref_i|, rms(ref)), which keeps
    outputs near zero (signed data) from blowing the relative error up, while one wrong element
    still shows (a norm would average it away). "element" (a family's ERROR_SCALE): each element
    against |ref_i| alone, for outputs that never cancel (prefix sums, softmax), so a wrong small
    element (an early scan tile) is not hidden under the rms of the large ones.
    """
    xp = np if isinstance(ref, np.ndarray) else cupy()  # NumPy too: the error models' CPU tests use it
    out64 = out.astype(xp.complex128 if out.dtype.kind == "c" else xp.float64)  # complex: FFT outputs
    not_written = int(xp.count_nonzero(xp.isnan(out64)))
    if scale_by == "element":
        scale = xp.maximum(xp.abs(ref), xp.finfo(xp.float64).tiny)  # ref_i = 0 needs out_i = 0 exactly
    else:
        rms = float(xp.sqrt(xp.mean(xp.abs(ref) ** 2))) if ref.size else 0.0
        scale = xp.maximum(xp.abs(ref), rms if rms > 0 else 1.0)
    err = xp.abs(out64 - ref) / scale
    worst = float(xp.nanmax(err)) if out.size > not_written else float("nan")
    return worst, not_written


def worse(a: float, b: float) -> float:
    """The larger error; NaN (nothing written to compare) wins over any number."""
    return float("nan") if math.isnan(a) or math.isnan(b) else max(a, b)


def check_at(host: FamilyHost, launch_for: LaunchFactory, size: dict[str, int], stream: Any,
             tolerance: float, inplace: bool = False,
             launches: int = CHECK_LAUNCHES) -> tuple[float, list[str], Prepared]:
    """Launch `launches` times at one size, judging each; (worst scaled error, reasons it is
    wrong, the buffers of the last launch)."""
    if launches < 1:
        raise ValueError(f"check_at needs at least one launch, not {launches}")
    inputs = host.make_inputs(size, secrets.randbits(63))  # fresh inputs on every check
    pristine = snapshot(inputs)  # the reference must not see what the kernel did to its inputs
    out = host.make_output(size)  # NaN-poisoned: unwritten elements cannot pass
    # Inputs and poison were made on CuPy's default stream; the timing stream does not wait for it.
    cupy().cuda.Device().synchronize()
    launch = launch_for(inputs, out, size)  # one launch closure, relaunched as timing relaunches it
    label = size_label(size)
    ref = None
    worst = 0.0
    reasons: list[str] = []
    for number in range(1, launches + 1):
        if number > 1:
            restart(host, inputs, out, pristine, size, inplace)
        launch(stream)
        settle(stream)
        if ref is None:
            ref = host.reference(pristine, size)  # once per size, from the untouched inputs
        where = label if number == 1 else f"{label}: launch {number} of {launches}"
        err, why = judge(host, out, pristine, size, tolerance, where, ref=ref)
        worst = worse(worst, err)
        if not reasons:
            reasons += why  # the first failing launch names the size's fault; later ones add nothing new
    del ref
    if not inplace:
        changed = changed_inputs(inputs, pristine)
        if changed:
            reasons.append(f"{label}: modified its inputs ({', '.join(changed)}); the family reads them only")
    return worst, reasons, Prepared(inputs, out, size, pristine, tolerance)


def restart(host: FamilyHost, inputs: dict[str, Any], out: Any, pristine: dict[str, Any], size: dict[str, int],
            inplace: bool) -> None:
    """Before a relaunch: an in-place family's inputs back as they were (copied into the same
    arrays: the launch closure holds them), and the output poisoned again."""
    if inplace:
        for name, before in pristine.items():
            inputs[name][...] = before
    poison_output(host, out, size)


def judge(host: FamilyHost, out: Any, pristine: dict[str, Any], size: dict[str, int], tolerance: float,
          label: str, ref: Any = None) -> tuple[float, list[str]]:
    """(worst scaled error, reasons) of one output against the float64 reference of the pristine
    inputs; ref: that reference when the caller already has it (check_at judges several launches)."""
    if ref is None:
        ref = host.reference(pristine, size)
    own_scaling = host.scaled_error
    if own_scaling is not None:  # a family whose output has parts on different scales (mnist)
        err, not_written = own_scaling(out, ref, size)
    else:
        err, not_written = scaled_error(out, ref, host.ERROR_SCALE)
    del ref
    if not_written:
        return err, [f"{label}: {not_written} of {out.size} outputs not written (still NaN)"]
    if not err <= tolerance:  # also catches NaN/inf errors
        return err, [f"{label}: error {err:.2e} > tolerance {tolerance:.0e}"]
    return err, []


def recheck_after_timing(host: FamilyHost, prepared: Prepared, stream: Any, inplace: bool = False) -> list[str]:
    """Reasons the output of the last timed launch (or the inputs) are not what the check passed.

    The output was re-poisoned before timing, so it holds what the timed launches wrote: a kernel
    that returns early after its first calls, or only writes when something changed, leaves NaN or a
    stale value here. Within tolerance is fine (atomics reorder sums from launch to launch)."""
    settle(stream)
    label = size_label(prepared.size)
    _err, why = judge(host, prepared.out, prepared.pristine, prepared.size, prepared.tolerance, label)
    reasons = [f"result changed while timed: {reason.removeprefix(label + ': ')} after the last timed launch, "
               "on new input values in the same buffers" for reason in why]
    if not inplace:
        changed = changed_inputs(prepared.inputs, prepared.pristine)
        if changed:
            reasons.append(f"modified its inputs while timed ({', '.join(changed)})")
    return reasons


def check_variant(host: FamilyHost, variant: Any, launch_for: LaunchFactory, sizes: list[dict[str, int]],
                  stream: Any, inplace: bool = False, launches: int | None = None) -> tuple[CheckResult, Prepared]:
    """Check at every size (the last one is the benchmark size); keep the last buffers for timing.
    launches: per size, from the family's manifest; None is CHECK_LAUNCHES."""
    launches = CHECK_LAUNCHES if launches is None else launches
    tolerance = 0.0
    worst = 0.0
    reasons: list[str] = []
    prepared = None
    for size in sizes:
        if prepared is not None:
            prepared = None  # free the previous size's buffers first
        tolerance = host.tolerance(variant, size)  # may grow with the size (long sums)
        err, why, prepared = check_at(host, launch_for, size, stream, tolerance, inplace, launches)
        worst = worse(worst, err)
        reasons += why
    if prepared is None:
        raise ValueError("check_variant needs at least one size")
    status = WRONG if reasons else OK
    return CheckResult(status=status, max_rel_error=worst, tolerance=tolerance,
                       sizes_checked=[dict(s) for s in sizes], reasons=reasons), prepared
