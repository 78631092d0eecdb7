"""The input classes (families/input_classes.py) for code that is not a family variant: a callable
given to `gpuprof.api.benchmark` or the pytest plugin's `gpuprof_bench`, with the arrays it reads,
the one it writes and a float64 reference. The same classes and tolerance models as `gpuprof run`:
each class fills the data inputs in place, the callable runs once, its output is judged against the
reference of those inputs; the inputs get their own values back afterwards."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gpuprof.families import input_classes

Reference = Callable[[dict[str, Any]], Any]  # float64 copies of the inputs -> the expected output


def default_classes(inputs: dict[str, Any], out: Any) -> tuple[str, ...]:
    """As for an [op] family: an output smaller than the data it reads reduces it (a sum, a mean,
    a norm of a vector): needles and heavy tails; otherwise none (a row-wise op names its own)."""
    from gpuprof.families.op_host import DEFAULT_REDUCING_CLASSES

    names = input_classes.data_inputs(inputs)
    largest = max((inputs[n].size for n in names), default=0)
    return DEFAULT_REDUCING_CLASSES if getattr(out, "size", 0) < largest else ()


def check_classes(run: Callable[[], None], inputs: dict[str, Any], out: Any, reference: Reference,
                  tolerance: float, classes: Sequence[str], precision: str = "fp32", exact_sums: bool = False,
                  error_scale: str = "rms", seed: int = 0) -> list[str]:
    """Reasons the callable is wrong on the classes' inputs ([] when right on every one). run()
    launches it and waits for it; out is the array it writes."""
    from gpuprof.measure.check import error_reasons, scaled_error

    for kind in classes:
        input_classes.get(kind)  # an unknown name is refused before anything runs
    reasons: list[str] = []
    own_values = {name: value.copy() for name, value in inputs.items() if hasattr(value, "copy")}
    try:
        for number, kind in enumerate(classes):
            input_classes.apply(kind, inputs, seed + number)
            out[...] = float("nan")  # poisoned: an element the callable skips cannot pass
            run()
            expected = reference({name: _float64(value) for name, value in inputs.items()})
            bound = input_classes.tolerance(kind, tolerance, precision, exact_sums)
            err, not_written = scaled_error(out, expected, input_classes.error_scale(kind, error_scale))
            reasons += error_reasons(f"on {input_classes.describe(kind)}", err, not_written, out.size, bound)
    finally:
        for name, value in own_values.items():
            inputs[name][...] = value
    return reasons


def _float64(value: Any) -> Any:
    kind = getattr(getattr(value, "dtype", None), "kind", "")
    return value.astype("float64") if kind == "f" else value
