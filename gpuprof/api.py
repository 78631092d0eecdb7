"""Python API: time any callable that launches GPU work (CuPy, PyTorch, Triton) with gpuprof's engine.

    import gpuprof.api as gp
    result = gp.benchmark(lambda: torch.matmul(a, b, out=c), flop=2 * n**3, label="torch mm")
    print(result.median_s, result.rate, result.timing.stop_reason)
    row = result.to_frame()   # one-row pandas DataFrame

The callable launches on the *current* stream; gpuprof makes its own timing stream current for
CuPy and for PyTorch (and so for Triton, which launches on PyTorch's current stream), so the
L2 flush, the stream hold and the events surround exactly the callable's work.

After timing, the callable is audited (gpuprof/measure/integrity.py): when its work ran on another
stream than the timing stream (torch.cuda.default_stream(), a stream of its own), the events timed
nothing, so the result's status is "impossible", its reasons say why, and it has no rate.

A callable is opaque: gpuprof cannot know which arrays it reads or what it should write. Give it
two hooks and it is checked as `gpuprof run` checks a variant, on values no launch has seen:

    def refresh():  x[...] = cp.random.random(x.shape, dtype=x.dtype)   # new values, same arrays
    def verify():   assert cp.allclose(y, x * 2)                          # y right for the current x
    result = gp.benchmark(lambda: double(x, y), refresh=refresh, verify=verify, bytes=8 * x.size)

fn() runs once and is verified; the inputs are refreshed and fn is timed; the last timed output is
verified; the inputs are refreshed again and one more fn() is verified. A verify that raises makes
the status "wrong" (a callable that replays a result it computed for earlier inputs fails there).

Name the arrays fn reads and writes, with a float64 reference, and it also gets `gpuprof run`'s
structured inputs (families/input_classes.py), judged by the same tolerance models, before timing:

    result = gp.benchmark(lambda: my_sum(x, out), inputs={"x": x}, out=out,
                          reference=lambda a: a["x"].sum(keepdims=True), tolerance=1e-5)

input_classes defaults as for a family folder: needles and heavy tails when out is smaller than the
data (the callable reduces it), none otherwise; a row-wise op with row statistics (softmax, a norm)
names ("spikes", "alternating"). exact_sums=True (out is sums of the inputs and nothing else) judges
whole-number classes to the exact-sum bound. The inputs get their own values back afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from typing import Any

from gpuprof.analysis import derive
from gpuprof.errors import UsageError
from gpuprof.gpu import cupy, device_info
from gpuprof.measure import device_ceilings, integrity, timing
from gpuprof.measure.check import settle
from gpuprof.results import IMPOSSIBLE, OK, WRONG, CheckResult, Row, Timing


@dataclass(frozen=True)
class BenchResult:
    label: str
    timing: Timing
    flop: float | None = None
    bytes: float | None = None
    status: str = OK  # IMPOSSIBLE: the timing cannot be the callable's work; WRONG: verify failed
    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def median_s(self) -> float | None:
        return self.timing.summary.median_s if self.timing.summary else None

    @property
    def rate(self) -> float | None:
        """FLOP/s when flop was given, else bytes/s when bytes was given, from the median; None
        when the timing is not trustworthy (status not OK)."""
        work = self.flop if self.flop is not None else self.bytes
        median = self.median_s
        return work / median if work and median and self.ok else None

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "status": self.status, "reasons": list(self.reasons), "flop": self.flop,
                "bytes": self.bytes, "median_s": self.median_s, "rate": self.rate, "timing": asdict(self.timing)}

    def to_frame(self) -> Any:
        import pandas as pd

        s = self.timing.summary
        return pd.DataFrame([{
            "label": self.label, "status": self.status, "mode": self.timing.mode, "median_s": self.median_s,
            "rel_spread": s.rel_spread if s else None, "samples": s.n if s else 0,
            "stop_reason": self.timing.stop_reason, "flop": self.flop, "bytes": self.bytes, "rate": self.rate,
        }])


def on_stream(fn: Callable[[], Any]) -> timing.Launch:
    """launch(stream) that runs fn() with `stream` current for CuPy and, when imported, PyTorch."""
    import sys

    def launch(stream: Any) -> None:
        with ExitStack() as stack:
            stack.enter_context(stream)  # CuPy: `with stream:` makes it current
            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_available():
                stack.enter_context(torch.cuda.stream(torch.cuda.ExternalStream(stream.ptr)))
            fn()

    return launch


def benchmark(fn: Callable[[], Any], *, mode: str = "cold", min_samples: int = 10, max_time_s: float = 2.0,
              target_spread: float = 0.005, flop: float | None = None, bytes: float | None = None,
              label: str | None = None, discard_throttled: bool = False, precision: str = "fp32",
              refresh: Callable[[], Any] | None = None, verify: Callable[[], Any] | None = None,
              inputs: dict[str, Any] | None = None, out: Any = None,
              reference: Callable[[dict[str, Any]], Any] | None = None,
              tolerance: float = 1e-5, input_classes: Sequence[str] | None = None, exact_sums: bool = False,
              error_scale: str = "rms") -> BenchResult:
    """Time fn() like `gpuprof run` times a variant: warm-up, then samples until the spread is
    small; then audit that its work ran on the timed stream (status IMPOSSIBLE when not). With
    verify (and refresh), also checked before and after timing on new input values (status WRONG).
    With inputs, out and reference, also checked on the input classes first (status WRONG)."""
    if refresh is not None and verify is None:
        raise UsageError("benchmark(refresh=...) needs verify=...: new input values are only useful to a check")
    if (inputs is None) != (reference is None) or (inputs is not None and out is None):
        raise UsageError("benchmark(inputs=..., out=..., reference=...) go together: the arrays fn reads, the one "
                         "it writes, and the float64 answer for given inputs")
    cupy()
    policy = timing.TimingPolicy(mode=mode, min_samples=min_samples, max_time_s=max_time_s,
                                 target_spread=target_spread, discard_throttled=discard_throttled)
    harness = timing.shared_harness()
    launch = on_stream(fn)
    name = label or str(getattr(fn, "__name__", "callable"))
    checks = _Checks(launch, harness, refresh, verify)
    wrong = checks.before_timing()
    if wrong:  # not timed, as `gpuprof run` times no wrong variant
        return BenchResult(name, Timing(mode, [], "not timed: wrong", None), flop, bytes, WRONG, (wrong,))
    if inputs is not None and reference is not None:
        reasons = _class_reasons(launch, harness, inputs, out, reference, tolerance, input_classes, precision,
                                 exact_sums, error_scale)
        if reasons:
            return BenchResult(name, Timing(mode, [], "not timed: wrong", None), flop, bytes, WRONG, tuple(reasons))
    result = timing.measure(launch, harness, policy)
    wrong = checks.after_timing()
    if wrong:
        return BenchResult(name, result, flop, bytes, WRONG, (wrong,))
    elsewhere = integrity.off_stream(launch, harness) or below_floor(result, flop, bytes, precision)
    if elsewhere:
        return BenchResult(name, result, flop, bytes, IMPOSSIBLE, (elsewhere,))
    return BenchResult(name, result, flop, bytes)


@dataclass(frozen=True)
class _Checks:
    """The user's refresh/verify hooks around timing (measure/check.py does the same for a family)."""

    launch: timing.Launch
    harness: Any  # timing.Harness: its stream is the timed one
    refresh: Callable[[], Any] | None
    verify: Callable[[], Any] | None

    def before_timing(self) -> str | None:
        if self.verify is None:
            return None
        wrong = self._launch_and_verify("on the first launch")
        if wrong is None and self.refresh is not None:
            self._refresh()
        return wrong

    def after_timing(self) -> str | None:
        if self.verify is None:
            return None
        settle(self.harness.stream)
        wrong = self._verified("after the last timed launch")
        if wrong is None and self.refresh is not None:
            self._refresh()
            wrong = self._launch_and_verify("on new input values after timing (does it reuse an earlier result?)")
        return wrong

    def _launch_and_verify(self, when: str) -> str | None:
        self.launch(self.harness.stream)
        settle(self.harness.stream)
        return self._verified(when)

    def _verified(self, when: str) -> str | None:
        assert self.verify is not None
        try:
            self.verify()
        except Exception as exc:  # noqa: BLE001 - any failure of the user's check is its verdict
            detail = " ".join(str(exc).split())[:200] or type(exc).__name__
            return f"verify failed {when}: {detail}"
        return None

    def _refresh(self) -> None:
        assert self.refresh is not None
        self.refresh()
        cupy().cuda.Device().synchronize()  # new values written on whichever stream was current


def _class_reasons(launch: timing.Launch, harness: Any, inputs: dict[str, Any], out: Any,
                   reference: Callable[[dict[str, Any]], Any], tolerance: float, classes: Sequence[str] | None,
                   precision: str, exact_sums: bool, error_scale: str) -> list[str]:
    """The callable on each input class (measure/class_check.py); arrays of any library that exposes
    __cuda_array_interface__ (PyTorch) are viewed as CuPy arrays, so the classes fill them in place."""
    import secrets

    from gpuprof.measure import class_check

    cp = cupy()
    arrays = {name: cp.asarray(value) for name, value in inputs.items()}
    written = cp.asarray(out)
    chosen = class_check.default_classes(arrays, written) if classes is None else tuple(classes)

    def run() -> None:
        cp.cuda.Device().synchronize()  # the classes' values were written on the default stream
        launch(harness.stream)
        settle(harness.stream)

    try:
        return class_check.check_classes(run, arrays, written, reference, tolerance, chosen, precision, exact_sums,
                                         error_scale, secrets.randbits(62))
    except ValueError as exc:
        raise UsageError(f"benchmark(input_classes=...): {exc}") from None


def below_floor(result: Timing, flop: float | None, bytes: float | None, precision: str) -> str | None:
    """The physical-floor test of `gpuprof run` (analysis.derive): a median faster than the declared
    bytes at the datasheet bandwidth, or FLOPs at the datasheet peak of `precision`, is not this work."""
    if flop is None and bytes is None:
        return None
    row = Row(family="api", variant="callable", size={}, vendor=False, check=CheckResult(status=OK), timing=result,
              flop=flop, bytes=bytes, precision=precision)
    return derive.impossible_reason(row, device_ceilings.load(device_info()))
