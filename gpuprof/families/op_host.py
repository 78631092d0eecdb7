"""The hooks of a family folder that describes its op in an [op] table instead of writing them in
Python: an elementwise or row-wise op on FP32 arrays, its reference a PyTorch function (or a
function of the folder's family.py), its counts arithmetic over the dims. registry._module builds
an OpModule from the parsed manifest and the folder's family.py (or None).

The [op] table (every key checked when the family is loaded; an error names the file and the key):

    inputs = { x = ["rows", "cols"] }   # name -> shape: dim names (or positive integers); FP32 device
                                        # arrays; this order is the reference's argument order
    output = { y = ["rows", "cols"] }   # exactly one output, name -> shape
    reference = "torch.nn.functional.gelu"   # a dotted callable (imported, never eval'ed) or
                                        # "family.py:function"; called with the inputs as float64 torch
                                        # tensors on the device, returns a tensor of the output's shape
    vendor = { torch = "family.py:vendor_torch" }  # optional: a vendor variant's `call` -> a callable
                                        # (inputs..., out) writing into `out` (FP32 torch tensors). A vendor
                                        # variant whose `call` is the reference string itself runs the
                                        # reference on the FP32 inputs and copies the result into the
                                        # output: its time includes that copy.
    rate = "bytes"                      # "bytes" (GB/s) or "flop" (TFLOP/s)
    flop = "3*n"                        # FLOP of one launch: integer arithmetic over the dims
    bytes = "8*n"                       # optional: bytes one launch must move (default: every input read
                                        # once and the output written once, 4 B per element)
    formula = "GB/s = ..."              # optional: the line under the run table (default: from rate and
                                        # the count)
    tolerance = 1e-5                    # optional: the largest scaled error (default: tolerance() below)
    error_scale = "rms"                 # optional: "rms" (default), "element", "row" (interface.FamilyHost) or "input"
    distributions = ["uniform", "normal", "heavy"]  # optional: the input distributions the check draws
    input_classes = ["spikes"]          # optional: structured inputs the check adds (families/input_classes.py);
                                        # default ["needles", "heavy_tail"] for an op that reduces a dim, else []

The kernel's arguments come from the manifest's `signature` by parameter name: a pointer named like
an input gets that input, one named like the output gets the output, an integer named like a dim
gets that dim's size (int32). torch is imported only when a reference or vendor row runs, and
NumPy only when inputs or arguments are made, so `gpuprof list` and `gpuprof build` of such a
folder start fast and need neither torch nor a GPU.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from gpuprof.errors import InputError
from gpuprof.families import _torch
from gpuprof.families._rounding import FP32, unit_roundoff
from gpuprof.gpu import cupy
from gpuprof.variants.declarations import parameters
from gpuprof.variants.expressions import evaluate, size_symbols

if TYPE_CHECKING:
    from gpuprof.families.interface import FamilyModule, Launch
    from gpuprof.variants.catalog import Family

OP_KEYS = ("inputs", "output", "reference", "vendor", "rate", "flop", "bytes", "formula", "tolerance",
           "error_scale", "distributions", "input_classes")
RATES = ("bytes", "flop")
# "input": each error against max(|ref_i|, rms(ref), rms(inputs)), for an activation whose output is
# small where its input is not (GELU's 0.5x(1 + tanh(z)) cancels for negative x, so an FP32 result
# is off by ~|x|·u there, a large part of a tiny |y|; a one-element check is otherwise judged against
# that tiny |y| alone).
ERROR_SCALES = ("rms", "element", "input", "row")  # "row": measure/check.py, rows with scales of their own
# Why several: a kernel that hard-codes an answer true for one distribution (a clamp that never
# triggers on [-1, 1), a shortcut for small |x|) is WRONG on another; the check draws fresh inputs
# with a fresh seed at every check size, so a run sees a mix of them.
DISTRIBUTIONS = ("uniform", "normal", "heavy")
HEAVY_LIMIT = 64.0  # heavy tails clipped here: large enough to reach overflow-prone paths, finite in FP32
# (x*x and exp(x) of |x| <= 64 stay below FP32's 3.4e38)
OWN_PREFIX = "family.py:"
# An op whose output lacks a dim of an input reduces over it: a sample or a skipped part of the input
# changes its answer, so the check adds these classes unless the table names its own.
DEFAULT_REDUCING_CLASSES = ("needles", "heavy_tail")
ELEMENT_BYTES = 4  # every buffer is FP32
# The default tolerance: a few dozen FP32 roundings and libm's few-ulp errors (tolerance()).
FP32_TOLERANCE = 1e-5
LOW_PRECISION_ROUNDINGS = 8

Shape = tuple[str | int, ...]


class OpModule:
    """FamilyModule hooks from an [op] table; `own` is the folder's family.py (or None)."""

    def __init__(self, family: Family, own: ModuleType | None) -> None:
        self.family = family
        self.manifest = family.directory / "family.toml"
        self.own = own
        op = dict(family.op or {})
        unknown = sorted(set(op) - set(OP_KEYS))
        if unknown:
            raise self._fail(unknown[0], f"is not an [op] key; known keys: {', '.join(OP_KEYS)}")
        self.inputs = self._shapes(op, "inputs")
        outputs = self._shapes(op, "output")
        if len(outputs) != 1:
            raise self._fail("output", f"names {len(outputs)} arrays; give exactly one, e.g. {{ y = [\"n\"] }}")
        (self.output_name, self.output_shape), = outputs.items()
        if self.output_name in self.inputs:
            raise self._fail("output", f"is named {self.output_name!r} like an input; give it its own name")
        self.reference_spec = self._callable_spec(op, "reference")
        self._reference_own = self._own_function("reference", self.reference_spec)
        self.vendor = self._vendor_table(op)
        self._check_vendor_variants()
        self.RATE = self._choice(op, "rate", RATES, None)
        self._flop = self._count(op, "flop")
        self._bytes = self._count(op, "bytes") if "bytes" in op else None
        self.FORMULA = self._formula(op)
        self._tolerance = self._positive(op, "tolerance")
        self.ERROR_SCALE = self._choice(op, "error_scale", ERROR_SCALES, "rms")
        self._input_rms = 0.0  # of the inputs the last reference() saw: "input" scaling reads it
        if self.ERROR_SCALE == "input":
            self.scaled_error = self._input_scaled_error  # interface.ScaledError: the check's own scaling yields
        self.distributions = self._distributions(op)
        self.INPUT_CLASSES = self._input_classes(op)
        self._arg_slots = self._slots()

    # ------------------------------------------------------------------ the table, checked

    def _fail(self, key: str, why: str) -> InputError:
        return InputError(f"{self.manifest}: 'op.{key}' {why}")

    def _shapes(self, op: dict[str, Any], key: str) -> dict[str, Shape]:
        value = op.get(key)
        example = '{ x = ["n"] }' if key == "inputs" else '{ y = ["n"] }'
        if not isinstance(value, dict) or not value:
            raise self._fail(key, f"must be a table of name = shape (a list of dim names), e.g. {example}")
        shapes = {}
        for name, shape in value.items():
            if not name.isidentifier():
                raise self._fail(key, f"names {name!r}; a buffer name is an identifier, as in the signature")
            shapes[name] = self._shape(key, name, shape)
        return shapes

    def _shape(self, key: str, name: str, shape: Any) -> Shape:
        dims = self.family.dims
        if not isinstance(shape, list) or not shape:
            raise self._fail(key, f"gives {name} = {shape!r}; a shape is a list of dim names or integers, "
                                  f"e.g. {list(dims)}")
        for extent in shape:
            if isinstance(extent, bool) or not isinstance(extent, (str, int)):
                raise self._fail(key, f"gives {name} an extent {extent!r}; use a dim name or a positive integer")
            if isinstance(extent, int) and extent < 1:
                raise self._fail(key, f"gives {name} an extent {extent}; integers must be positive")
            if isinstance(extent, str) and extent not in dims:
                raise self._fail(key, f"gives {name} the extent {extent!r}, which is not a dim ({', '.join(dims)})")
        return tuple(shape)

    def _callable_spec(self, op: dict[str, Any], key: str, value: Any = None) -> str:
        """A dotted name ("torch.nn.functional.gelu") or "family.py:function", checked as text."""
        value = op.get(key) if value is None else value
        if not isinstance(value, str) or not value:
            raise self._fail(key, 'must name a callable: a dotted name such as "torch.nn.functional.gelu" '
                                  'or "family.py:function"')
        if value.startswith(OWN_PREFIX):
            if not value.removeprefix(OWN_PREFIX).isidentifier():
                raise self._fail(key, f"is {value!r}; write family.py:FUNCTION with FUNCTION a Python name")
            return value
        parts = value.split(".")
        if len(parts) < 2 or not all(p.isidentifier() for p in parts):
            raise self._fail(key, f"is {value!r}; name a module's function, e.g. \"torch.sin\", or \"family.py:NAME\"")
        return value

    def _own_function(self, key: str, spec: str) -> Callable[..., Any] | None:
        """The family.py function a spec names (None for a dotted name, resolved at its first use)."""
        if not spec.startswith(OWN_PREFIX):
            return None
        name = spec.removeprefix(OWN_PREFIX)
        python = self.family.directory / "family.py"
        if self.own is None:
            raise self._fail(key, f"is {spec!r}, but there is no {python}; write it or name a dotted callable")
        function = getattr(self.own, name, None)
        if not callable(function):
            raise InputError(f"{python}: defines no function {name} (the manifest's 'op.{key}' names it)")
        return function

    def _vendor_table(self, op: dict[str, Any]) -> dict[str, str]:
        value = op.get("vendor", {})
        if not isinstance(value, dict):
            raise self._fail("vendor", 'must be a table of call = callable, e.g. { torch = "family.py:vendor_torch" }')
        table = {}
        for call, spec in value.items():
            table[call] = self._callable_spec(op, f"vendor.{call}", spec)
            self._own_function(f"vendor.{call}", table[call])
        return table

    def _check_vendor_variants(self) -> None:
        """Every vendor variant's `call` is in the vendor table or is the reference itself."""
        for variant in self.family.variants:
            if variant.vendor and variant.call not in self.vendor and variant.call != self.reference_spec:
                known = [*self.vendor, self.reference_spec]
                raise self._fail("vendor", f"has no call {variant.call!r} for the vendor variant {variant.name!r}; "
                                           f"its `call` may be: {', '.join(known)}")

    def _choice(self, op: dict[str, Any], key: str, choices: tuple[str, ...], default: str | None) -> str:
        value = op.get(key, default)
        if value not in choices:
            shown = "missing" if value is None else f"{value!r}"
            raise self._fail(key, f"is {shown}; choose from: {', '.join(choices)}")
        return str(value)

    def _count(self, op: dict[str, Any], key: str) -> int | str:
        """An integer or an arithmetic string over the dims, evaluated at every size the manifest gives."""
        value = op.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise self._fail(key, f"must be an integer or arithmetic over the dims, e.g. \"3*{self.family.dims[0]}\"")
        for size in (self.family.default_size, *self.family.check_sizes):
            try:
                counted = self._evaluate(value, size)
            except (ValueError, ZeroDivisionError) as exc:
                raise self._fail(key, str(exc)) from None
            if counted < 0:
                raise self._fail(key, f"is {counted} at size {size}; a count cannot be negative")
        return value

    def _evaluate(self, expr: int | str, size: dict[str, int]) -> int:
        return evaluate(expr, size_symbols(self.family.dims, size), "the dims")

    def _formula(self, op: dict[str, Any]) -> str:
        copies = [v.name for v in self.family.variants if v.vendor and v.call == self.reference_spec]
        disclosed = f"; {', '.join(copies)}: the reference in FP32, its time includes a copy into the output"
        return self._rate_formula(op) + (disclosed if copies else "")

    def _rate_formula(self, op: dict[str, Any]) -> str:
        if "formula" in op:
            value = op["formula"]
            if not isinstance(value, str) or not value.strip():
                raise self._fail("formula", "must be a non-empty line of text")
            return value
        if self.RATE == "flop":
            return f"TFLOP/s = {self._flop} FLOP / median time"
        if self._bytes is not None:
            return f"GB/s = {self._bytes} bytes / median time"
        read = ", ".join(self.inputs)
        terms = " + ".join("·".join(map(str, s)) for s in (*self.inputs.values(), self.output_shape))
        return (f"GB/s = {ELEMENT_BYTES}·({terms}) bytes ({read} read once, {self.output_name} written once, "
                f"{ELEMENT_BYTES} B each) / median time")

    def _positive(self, op: dict[str, Any], key: str) -> float | None:
        if key not in op:
            return None
        value = op[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise self._fail(key, f"is {value!r}; give a positive number, e.g. 1e-5")
        return float(value)

    def _input_classes(self, op: dict[str, Any]) -> tuple[str, ...]:
        """Structured inputs the check adds (families/input_classes.py), judged by the family's own
        tolerance. Default: needles and heavy tails for an op that reduces (its output lacks a dim an
        input has: a sum, a mean, a norm of a vector), none for an elementwise or row-wise op (a
        row-wise op that takes row statistics, softmax or a norm, declares ["spikes", "alternating"])."""
        from gpuprof.families import input_classes

        if "input_classes" not in op:
            reduced = {d for shape in self.inputs.values() for d in shape if isinstance(d, str)} - {
                d for d in self.output_shape if isinstance(d, str)}
            return DEFAULT_REDUCING_CLASSES if reduced else ()
        value = op["input_classes"]
        if not isinstance(value, list) or not all(v in input_classes.CLASSES for v in value):
            raise self._fail("input_classes", f"must be a list drawn from {list(input_classes.CLASSES)}")
        return tuple(value)

    def _distributions(self, op: dict[str, Any]) -> tuple[str, ...]:
        value = op.get("distributions", list(DISTRIBUTIONS))
        if not isinstance(value, list) or not value or any(d not in DISTRIBUTIONS for d in value):
            raise self._fail("distributions", f"is {value!r}; a non-empty list from: {', '.join(DISTRIBUTIONS)}")
        return tuple(value)

    def _slots(self) -> list[tuple[str, str]]:
        """(kind, name) per signature parameter: ("input", x), ("output", y) or ("dim", n)."""
        slots = []
        for ctype, name in parameters(self.family.signature):
            slots.append(self._slot(ctype, name))
        if ("output", self.output_name) not in slots:
            raise InputError(f"{self.manifest}: 'signature' has no parameter {self.output_name}, the [op] output; "
                             "the kernel could not write it")
        return slots

    def _slot(self, ctype: str, name: str) -> tuple[str, str]:
        where = f"{self.manifest}: 'signature' parameter '{ctype} {name}'"
        if ctype.endswith("*"):
            if ctype.replace("const", "").replace("*", "").strip() != "float":
                raise InputError(f"{where}: [op] buffers are FP32, so a pointer parameter is float* or const float*")
            if name == self.output_name:
                if ctype.startswith("const"):
                    raise InputError(f"{where}: {name} is the output, so it cannot be const")
                return ("output", name)
            if name in self.inputs:
                return ("input", name)
            raise InputError(f"{where}: names no [op] input or output ({', '.join([*self.inputs, self.output_name])})")
        if name in self.family.dims and ctype.replace("const", "").strip() in ("int", "int32_t"):
            return ("dim", name)
        raise InputError(f"{where}: an [op] family passes its buffers by name and its dims "
                         f"({', '.join(self.family.dims)}) as int; rename it or give the variant `args`")

    # ------------------------------------------------------------------ the hooks

    def flop(self, size: dict[str, int]) -> float:
        return float(self._evaluate(self._flop, size))

    def bytes_moved(self, size: dict[str, int]) -> float:
        if self._bytes is not None:
            return float(self._evaluate(self._bytes, size))
        return _bytes_of((*self.inputs.values(), self.output_shape), size)

    def bytes_read(self, size: dict[str, int]) -> float:
        """Every input read once: what ncu's DRAM read bytes must reach (analysis/byte_witness.py)."""
        return _bytes_of(self.inputs.values(), size)

    def tolerance(self, variant: Any, size: dict[str, int]) -> float:
        """The table's `tolerance`, or this model: an elementwise or short row-wise op in FP32 gives
        each output a few roundings (each at most u = 2^-24 = 6e-8 of the terms it combines) plus
        libm's few-ulp errors (expf, erff, tanhf; the __expf-style intrinsics ~2^-21). Judged
        against max(|ref_i|, rms(ref)), 1e-5 (~170 u) holds a few dozen such steps with margin,
        while a wrong element (an O(1) error) still fails. A variant computing in lower precision
        rounds every step to its own u: 8 u (fp16/tf32 3.9e-3, bf16 3.1e-2). A long reduction
        (a row sum over many columns, error growing like cols*u) needs its own `tolerance`."""
        if self._tolerance is not None:
            return self._tolerance
        u = max(unit_roundoff(variant.precision), FP32)
        return max(FP32_TOLERANCE, LOW_PRECISION_ROUNDINGS * u)

    def distribution(self, seed: int) -> str:
        """The distribution a seed draws from: the check's seeds are random, so a run sees several."""
        return self.distributions[seed % len(self.distributions)]

    def make_inputs(self, size: dict[str, int], seed: int) -> dict[str, Any]:
        from gpuprof.families._random import generator  # numpy: imported when inputs are made, not at load

        cp = cupy()
        rng = generator(seed)
        kind = self.distribution(seed)
        return {name: draw(rng, cp, kind, _extents(shape, size)) for name, shape in self.inputs.items()}

    def make_output(self, size: dict[str, int]) -> Any:
        cp = cupy()
        return cp.full(_extents(self.output_shape, size), cp.nan, dtype=cp.float32)

    def kernel_args(self, inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
        import numpy as np

        args: list[Any] = []
        for kind, name in self._arg_slots:
            if kind == "input":
                args.append(inputs[name])
            elif kind == "output":
                args.append(out)
            else:
                args.append(np.int32(size[name]))
        return tuple(args)

    def reference(self, inputs: dict[str, Any], size: dict[str, int]) -> Any:
        """The reference callable on float64 copies of the inputs, on CuPy's current stream; a CuPy
        float64 array of the output's shape."""
        t = _torch.torch()
        cp = cupy()
        function = self._callable(self.reference_spec, self._reference_own, "reference")
        with _on_current_stream(cp):
            args = [t.from_dlpack(inputs[name].astype(cp.float64)) for name in self.inputs]
            if self.ERROR_SCALE == "input":  # the check judges right after the reference of the same inputs
                self._input_rms = max(float(cp.sqrt(cp.mean(inputs[name].astype(cp.float64) ** 2)))
                                      if inputs[name].size else 0.0 for name in self.inputs)
            result = self._call(function, self.reference_spec, "reference", args)
            expected = _extents(self.output_shape, size)
            return self._as_output(result, args, expected, self.reference_spec, t, cp)

    def _input_scaled_error(self, out: Any, ref: Any, size: dict[str, int]) -> tuple[float, int]:
        """(worst |out - ref| / max(|ref_i|, rms(ref), rms(inputs)), outputs left NaN): ERROR_SCALE "input"."""
        import numpy as np

        xp = np if isinstance(ref, np.ndarray) else cupy()
        out64 = out.astype(xp.float64)
        not_written = int(xp.count_nonzero(xp.isnan(out64)))
        if out.size == not_written:
            return float("nan"), not_written
        rms = float(xp.sqrt(xp.mean(xp.abs(ref) ** 2))) if ref.size else 0.0
        scale = xp.maximum(xp.abs(ref), max(rms, self._input_rms, float(np.finfo(np.float64).tiny)))
        return float(xp.nanmax(xp.abs(out64 - ref) / scale)), not_written

    def vendor_launch(self, call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]) -> Launch:
        """launch(stream) of a vendor row: the vendor table's callable writing into the output, or
        (a `call` naming the reference) the reference on the FP32 inputs copied into it."""
        if call not in self.vendor and call != self.reference_spec:
            raise KeyError(call)
        xs = [_torch.as_tensor(inputs[name]) for name in self.inputs]
        y = _torch.as_tensor(out)
        if call in self.vendor:
            spec = self.vendor[call]
            function = self._callable(spec, self._own_function(f"vendor.{call}", spec), f"vendor.{call}")

            def launch(stream: Any) -> None:
                with _torch.on_stream(stream):
                    self._call(function, spec, f"vendor.{call}", [*xs, y])

            return launch
        reference = self._callable(self.reference_spec, self._reference_own, "reference")

        def launch_reference(stream: Any) -> None:
            with _torch.on_stream(stream):  # the copy into the output is part of the timed work
                y.copy_(self._call(reference, self.reference_spec, "reference", xs).reshape(y.shape))

        return launch_reference

    # ------------------------------------------------------------------ calling the user's code

    def _callable(self, spec: str, own: Callable[..., Any] | None, key: str) -> Callable[..., Any]:
        if own is not None:
            return own
        try:
            return resolve_dotted(spec)
        except (ImportError, AttributeError, TypeError) as exc:
            raise self._fail(key, f"is {spec!r}, which cannot be found ({exc})") from None

    def _where(self, spec: str, key: str) -> str:
        if spec.startswith(OWN_PREFIX):
            return f"{self.family.directory / 'family.py'}: {spec.removeprefix(OWN_PREFIX)}()"
        return f"{self.manifest}: 'op.{key}' {spec}()"

    def _call(self, function: Callable[..., Any], spec: str, key: str, args: list[Any]) -> Any:
        try:
            return function(*args)
        except Exception as exc:  # noqa: BLE001 (the user's function: its error, in one line)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise InputError(f"{self._where(spec, key)} raised {type(exc).__name__}: {first}") from None

    def _as_output(self, result: Any, args: list[Any], expected: tuple[int, ...], spec: str, t: ModuleType,
                   cp: ModuleType) -> Any:
        shape = tuple(getattr(result, "shape", ()))
        if shape != expected:
            raise InputError(f"{self._where(spec, 'reference')} returned shape {list(shape)}; the output "
                             f"{self.output_name} is {list(expected)}")
        if isinstance(result, t.Tensor):
            device = args[0].device if args else result.device
            return cp.from_dlpack(result.detach().to(device=device, dtype=t.float64).contiguous())
        return cp.asarray(result, dtype=cp.float64)


def _on_current_stream(cp: ModuleType) -> Any:
    """torch on CuPy's current stream, so the reference is ordered after the inputs were made;
    on the legacy default stream (handle 0) both libraries already share it."""
    stream = cp.cuda.get_current_stream()
    return _torch.on_stream(stream) if getattr(stream, "ptr", 0) else contextlib.nullcontext()


def _bytes_of(shapes: Iterable[Shape], size: dict[str, int]) -> float:
    """FP32 buffers of these shapes at this size, each moved once."""
    return float(ELEMENT_BYTES * sum(math.prod(_extents(s, size)) for s in shapes))


def _extents(shape: Shape, size: dict[str, int]) -> tuple[int, ...]:
    return tuple(size[e] if isinstance(e, str) else e for e in shape)


def draw(rng: Any, xp: ModuleType, kind: str, shape: tuple[int, ...]) -> Any:
    """FP32 values of one distribution: "uniform" in [-1, 1), "normal" standard normal, "heavy" a
    Cauchy (the ratio of two normals: rare values far out, like activations' outliers) clipped to
    +-HEAVY_LIMIT so every value and x*x stay finite."""
    if kind == "uniform":
        return rng.uniform(-1.0, 1.0, shape, dtype=xp.float32)
    if kind == "normal":
        return rng.standard_normal(shape, dtype=xp.float32)
    top = rng.standard_normal(shape, dtype=xp.float32)
    bottom = rng.standard_normal(shape, dtype=xp.float32)
    bottom = xp.where(bottom == 0, xp.float32(1), bottom)  # 0/0 would be NaN
    return xp.clip(top / bottom, -HEAVY_LIMIT, HEAVY_LIMIT).astype(xp.float32)


def resolve_dotted(spec: str) -> Callable[..., Any]:
    """"torch.nn.functional.gelu": the top module imported, then attributes (importing a submodule
    where an attribute is not there yet); nothing is evaluated."""
    parts = spec.split(".")
    target: Any = importlib.import_module(parts[0])
    for index, part in enumerate(parts[1:], 2):
        if not hasattr(target, part):
            importlib.import_module(".".join(parts[:index]))
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{spec} is not callable")
    return target


if TYPE_CHECKING:
    def _conforms(module: OpModule) -> FamilyModule:  # mypy checks OpModule against the protocol
        return module
