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

A kernel that reads its output (`reads_output`, e.g. C = alpha*A*B + beta*C) cannot start from
NaN: its output starts from known random values instead, fresh before every launch, and the
reference includes them (the family's epilogue). An element a launch leaves unwritten still holds
its starting value, which the reference (almost surely) does not: it is counted as not written.
After timing the output is checked again only where it does not feed back into itself (beta = 0):
each timed launch reads what the one before wrote.

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

from gpuprof.families import _random, input_classes
from gpuprof.families.interface import FamilyHost
from gpuprof.gpu import cupy
from gpuprof.results import OK, WRONG, CheckResult, size_label


@dataclass(frozen=True)
class OutputUse:
    """How a variant treats the family's output: written only (NaN poison), or read first
    (reads_output: known random starting values); scalars are the family's, as the kernel gets them."""

    reads_output: bool = False
    scalars: dict[str, float] = field(default_factory=dict)

    def feeds_back(self, host: FamilyHost) -> bool:
        """Whether each launch's result depends on the output it found (matmul: beta != 0)."""
        return self.reads_output and host.reads_start(self.scalars)

    def notes(self, host: FamilyHost) -> list[str]:
        """What the check did for this variant beyond its usual method, for the footnote."""
        if not self.reads_output:
            return []
        given = ", ".join(f"{k} = {v:g}" for k, v in self.scalars.items())
        lines = [("reads its output: it started from known random values (fresh before every check launch), "
                  f"the reference included them{f' ({given})' if given else ''}; an element left at its "
                  "starting value counted as not written")]
        if self.feeds_back(host):
            lines.append("output after timing not compared: each timed launch reads what the one before wrote "
                         "(inputs still compared; the timing audit for skipped work still ran)")
        return lines


WRITES_ONLY = OutputUse()

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
    use: OutputUse = WRITES_ONLY
    start: Any = None  # the output's starting values before the launch (reads_output), else None


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
    """Fill the output with the family's poison again (or fresh starting values, for a kernel that
    reads its output), so timing starts from an unwritten output."""
    prepared.start = poison_output(host, prepared.out, prepared.size, prepared.use)


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
    repoison(host, prepared)


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
    ref = expected(host, host.reference(prepared.pristine, prepared.size), prepared.use, prepared.start)
    _err, why = judge(host, prepared.out, prepared.pristine, prepared.size, prepared.tolerance, label,
                      ref=ref, start=prepared.start)
    return [f"wrong on new input values in the same buffers after timing: {reason.removeprefix(label + ': ')} "
            "(does it reuse a result computed for earlier inputs?)" for reason in why]


def poison_output(host: FamilyHost, out: Any, size: dict[str, int], use: OutputUse = WRITES_ONLY) -> Any:
    """The family's poison (NaN) into the existing output array, which the launch closure holds; for
    a kernel that reads its output, fresh known random values instead, returned (a copy)."""
    out[...] = host.make_output(size)
    start = None
    if use.reads_output:
        start = starting_values(out, secrets.randbits(63))
        out[...] = start
    cupy().cuda.Device().synchronize()  # made on the default stream; the launch's stream does not wait
    return start


def starting_values(out: Any, seed: int) -> Any:
    """Known random values for an output a kernel reads: uniform in [-1, 1], in the output's type.
    Drawn where the families draw their inputs (_random: on the host in a sanitized child, so the
    sanitizer does not instrument cuRAND's set-up kernels for them)."""
    rng = _random.generator(seed)
    if out.dtype.kind == "c":
        real = rng.uniform(-1.0, 1.0, out.shape) + 1j * rng.uniform(-1.0, 1.0, out.shape)
        return real.astype(out.dtype)
    if out.dtype.kind != "f":
        raise ValueError(f"reads_output needs a floating-point output, not {out.dtype}")
    return rng.uniform(-1.0, 1.0, out.shape).astype(out.dtype)


def expected(host: FamilyHost, plain_ref: Any, use: OutputUse, start: Any) -> Any:
    """The reference for one launch: the family's plain reference through its epilogue (the
    scalars, and the starting values of an output the kernel reads)."""
    if not use.scalars and start is None:
        return plain_ref
    start64 = None if start is None else start.astype(plain_ref.dtype)
    return host.epilogue(plain_ref, start64, use.scalars)


def scaled_error(out: Any, ref: Any, scale_by: str = "rms") -> tuple[float, int]:
    """(max |out - ref| / scale, count of NaN outputs).

    scale_by "rms" (the default): each element against max(|ref_i|, rms(ref)), which keeps
    outputs near zero (signed data) from blowing the relative error up, while one wrong element
    still shows (a norm would average it away). "element" (a family's ERROR_SCALE): each element
    against |ref_i| alone, for outputs that never cancel (prefix sums, softmax), so a wrong small
    element (an early scan tile) is not hidden under the rms of the large ones. "row": each element
    against max(|ref_i|, rms of its row along the last axis), for outputs whose rows have scales of
    their own (attention: a query that averages a few values against one that averages thousands).
    """
    xp = np if isinstance(ref, np.ndarray) else cupy()  # NumPy too: the error models' CPU tests use it
    out64 = out.astype(xp.complex128 if out.dtype.kind == "c" else xp.float64)  # complex: FFT outputs
    not_written = int(xp.count_nonzero(xp.isnan(out64)))
    err = xp.abs(out64 - ref) / _scale(ref, scale_by)
    worst = float(xp.nanmax(err)) if out.size > not_written else float("nan")
    return worst, not_written


def _scale(ref: Any, scale_by: str) -> Any:
    xp = np if isinstance(ref, np.ndarray) else cupy()
    if scale_by == "element":
        return xp.maximum(xp.abs(ref), xp.finfo(xp.float64).tiny)  # ref_i = 0 needs out_i = 0 exactly
    if scale_by == "row":
        row_rms = xp.sqrt(xp.mean(xp.abs(ref) ** 2, axis=-1, keepdims=True))
        return xp.maximum(xp.abs(ref), xp.where(row_rms > 0, row_rms, 1.0))
    rms = float(xp.sqrt(xp.mean(xp.abs(ref) ** 2))) if ref.size else 0.0
    return xp.maximum(xp.abs(ref), rms if rms > 0 else 1.0)


def kept_start(out: Any, start: Any, ref: Any, tolerance: float, scale_by: str = "rms") -> int:
    """Elements still holding their starting value, bit for bit, where the reference is not within
    tolerance of it: outputs the launch did not write (a kernel that reads its output)."""
    xp = np if isinstance(ref, np.ndarray) else cupy()
    same = out == start
    if not bool(xp.any(same)):
        return 0
    far = xp.abs(start.astype(ref.dtype) - ref) / _scale(ref, scale_by) > tolerance
    return int(xp.count_nonzero(same & far))


def worse(a: float, b: float) -> float:
    """The larger error; NaN (nothing written to compare) wins over any number."""
    return float("nan") if math.isnan(a) or math.isnan(b) else max(a, b)


def check_at(host: FamilyHost, launch_for: LaunchFactory, size: dict[str, int], stream: Any,
             tolerance: float, inplace: bool = False, launches: int = CHECK_LAUNCHES,
             use: OutputUse = WRITES_ONLY) -> tuple[float, list[str], Prepared]:
    """Launch `launches` times at one size, judging each; (worst scaled error, reasons it is
    wrong, the buffers of the last launch)."""
    if launches < 1:
        raise ValueError(f"check_at needs at least one launch, not {launches}")
    inputs = host.make_inputs(size, secrets.randbits(63))  # fresh inputs on every check
    pristine = snapshot(inputs)  # the reference must not see what the kernel did to its inputs
    out = host.make_output(size)  # NaN-poisoned: unwritten elements cannot pass
    start = poison_output(host, out, size, use) if use.reads_output else None
    # Inputs and poison were made on CuPy's default stream; the timing stream does not wait for it.
    cupy().cuda.Device().synchronize()
    launch = launch_for(inputs, out, size)  # one launch closure, relaunched as timing relaunches it
    label = size_label(size)
    plain = None
    worst = 0.0
    reasons: list[str] = []
    for number in range(1, launches + 1):
        if number > 1:
            start = restart(host, inputs, out, pristine, size, inplace, use)
        launch(stream)
        settle(stream)
        if plain is None:
            plain = host.reference(pristine, size)  # once per size, from the untouched inputs
        where = label if number == 1 else f"{label}: launch {number} of {launches}"
        err, why = judge(host, out, pristine, size, tolerance, where, ref=expected(host, plain, use, start),
                         start=start)
        worst = worse(worst, err)
        if not reasons:
            reasons += why  # the first failing launch names the size's fault; later ones add nothing new
    del plain
    if not inplace:
        changed = changed_inputs(inputs, pristine)
        if changed:
            reasons.append(f"{label}: modified its inputs ({', '.join(changed)}); the family reads them only")
    return worst, reasons, Prepared(inputs, out, size, pristine, tolerance, use, start)


def check_input_class(host: FamilyHost, launch_for: LaunchFactory, size: dict[str, int], stream: Any,
                      tolerance: float, kind: str, use: OutputUse = WRITES_ONLY) -> tuple[float, list[str]]:
    """One launch on inputs of a structured class (families/input_classes.py), in buffers of its own,
    judged against the reference of those inputs: (scaled error, reasons it is wrong)."""
    seed = secrets.randbits(63)
    inputs = host.make_inputs(size, seed)
    input_classes.apply(kind, inputs, seed)
    pristine = snapshot(inputs)
    out = host.make_output(size)
    start = poison_output(host, out, size, use)
    launch_for(inputs, out, size)(stream)
    settle(stream)
    ref = expected(host, host.reference(pristine, size), use, start)
    label = f"{size_label(size)} on {input_classes.describe(kind)}"
    return judge(host, out, pristine, size, tolerance, label, ref=ref, start=start,
                 scale_by=input_classes.error_scale(kind, host.ERROR_SCALE))


def input_class_tolerance(host: FamilyHost, variant: Any, kind: str, family_tolerance: float,
                          size: dict[str, int]) -> float:
    """The bound on `kind` inputs (families/input_classes.py: exact for whole-number sums), as the
    family's class_tolerance hook adjusts it for its error models."""
    bound = input_classes.tolerance(kind, family_tolerance, getattr(variant, "precision", "fp32"), host.EXACT_SUMS)
    return host.class_tolerance(variant, size, kind, bound)


def restart(host: FamilyHost, inputs: dict[str, Any], out: Any, pristine: dict[str, Any], size: dict[str, int],
            inplace: bool, use: OutputUse = WRITES_ONLY) -> Any:
    """Before a relaunch: an in-place family's inputs back as they were (copied into the same
    arrays: the launch closure holds them), and the output poisoned again (its new starting values
    returned, for a kernel that reads its output)."""
    if inplace:
        for name, before in pristine.items():
            inputs[name][...] = before
    return poison_output(host, out, size, use)


def judge(host: FamilyHost, out: Any, pristine: dict[str, Any], size: dict[str, int], tolerance: float,
          label: str, ref: Any = None, start: Any = None, scale_by: str | None = None) -> tuple[float, list[str]]:
    """(worst scaled error, reasons) of one output against the float64 reference of the pristine
    inputs; ref: that reference when the caller already has it (check_at judges several launches);
    start: the output's starting values, for a kernel that reads its output; scale_by: the error
    scale when not the family's (an input class's)."""
    if ref is None:
        ref = host.reference(pristine, size)
    scale_by = scale_by or host.ERROR_SCALE
    if start is not None and host.scaled_error is None:
        kept = kept_start(out, start, ref, tolerance, scale_by)
        if kept:
            reason = f"{label}: {kept} of {out.size} outputs not written (still hold their starting values)"
            return float("nan"), [reason]
    own_scaling = host.scaled_error
    if own_scaling is not None:  # a family whose output has parts on different scales (mnist)
        err, not_written = own_scaling(out, ref, size)
    else:
        err, not_written = scaled_error(host.output_values(out), ref, scale_by)
    del ref
    return err, error_reasons(label, err, not_written, out.size, tolerance)


def error_reasons(label: str, err: float, not_written: int, count: int, tolerance: float) -> list[str]:
    """The check's words for one output of `count` elements: NaN left unwritten, or an error over the
    tolerance (a NaN or infinite error too); [] when it passes."""
    if not_written:
        return [f"{label}: {not_written} of {count} outputs not written (still NaN)"]
    if not err <= tolerance:
        return [f"{label}: error {err:.2e} > tolerance {tolerance:.0e}"]
    return []


def recheck_after_timing(host: FamilyHost, prepared: Prepared, stream: Any, inplace: bool = False) -> list[str]:
    """Reasons the output of the last timed launch (or the inputs) are not what the check passed.

    The output was re-poisoned before timing, so it holds what the timed launches wrote: a kernel
    that returns early after its first calls, or only writes when something changed, leaves NaN or a
    stale value here. Within tolerance is fine (atomics reorder sums from launch to launch)."""
    settle(stream)
    label = size_label(prepared.size)
    if prepared.use.feeds_back(host):
        why: list[str] = []  # each timed launch read the one before's output: no reference to hold it to
    else:
        ref = expected(host, host.reference(prepared.pristine, prepared.size), prepared.use, prepared.start)
        _err, why = judge(host, prepared.out, prepared.pristine, prepared.size, prepared.tolerance, label,
                          ref=ref, start=prepared.start)
    reasons = [f"result changed while timed: {reason.removeprefix(label + ': ')} after the last timed launch, "
               "on new input values in the same buffers" for reason in why]
    if not inplace:
        changed = changed_inputs(prepared.inputs, prepared.pristine)
        if changed:
            reasons.append(f"modified its inputs while timed ({', '.join(changed)})")
    return reasons


def check_variant(host: FamilyHost, variant: Any, launch_for: LaunchFactory, sizes: list[dict[str, int]],
                  stream: Any, inplace: bool = False, launches: int | None = None,
                  use: OutputUse = WRITES_ONLY) -> tuple[CheckResult, Prepared]:
    """Check at every size (the last one is the benchmark size); keep the last buffers for timing.
    launches: per size, from the family's manifest; None is CHECK_LAUNCHES. use: how the variant
    treats its output (reads_output, the scalars it gets)."""
    launches = CHECK_LAUNCHES if launches is None else launches
    tolerance = 0.0
    worst = 0.0
    reasons: list[str] = []
    prepared = None
    for size in sizes:
        if prepared is not None:
            prepared = None  # free the previous size's buffers first
        tolerance = host.tolerance(variant, size)  # may grow with the size (long sums)
        err, why, prepared = check_at(host, launch_for, size, stream, tolerance, inplace, launches, use)
        worst = worse(worst, err)
        reasons += why
        for kind in host.INPUT_CLASSES:
            bound = input_class_tolerance(host, variant, kind, tolerance, size)
            err, why = check_input_class(host, launch_for, size, stream, bound, kind, use)
            worst = worse(worst, err)
            reasons += why
    if prepared is None:
        raise ValueError("check_variant needs at least one size")
    status = WRONG if reasons else OK
    if not use.reads_output and any("still NaN" in r for r in reasons) and use.scalars:
        reasons.append("a kernel that reads its output turns the NaN poison into NaN results even where its "
                       "scalar is 0 (0*NaN is NaN): add --reads-output (reads_output = true)")
    return CheckResult(status=status, max_rel_error=worst, tolerance=tolerance,
                       sizes_checked=[dict(s) for s in sizes], reasons=reasons, notes=use.notes(host),
                       input_classes=list(host.INPUT_CLASSES)), prepared
