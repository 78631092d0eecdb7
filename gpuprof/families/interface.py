"""The host side of a kernel family: what gpuprof/families/<family>.py provides (FamilyModule, and the
optional hooks Plan, Notes, Epilogue, ScaledError) and how callers use it (FamilyHost: the optional hooks'
defaults in one place, so no caller probes a module for them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from gpuprof.results import Row
    from gpuprof.variants.catalog import Family, Variant
    from gpuprof.variants.launch_plan import LaunchContext

Launch = Callable[[Any], None]  # launch(stream): queues the variant's work on the stream

# A launch may carry an untimed reset: launch.untimed_reset(stream) puts back the state every
# sample starts from (transfers' managed pages prefetched back to the host), run by the timer
# before each sample and outside its events. Only host-synchronous variants may have one
# (measure/timing.py). The launch wrappers (variants/launch_plan.py: NVTX ranges, zeroing) keep it.
UNTIMED_RESET = "untimed_reset"


class FamilyModule(Protocol):
    """The required hooks of gpuprof/families/<family>.py, which goes with kernels/<family>/family.toml.

    `size` is one size of the family (the manifest's dimension names -> int), `inputs` what
    make_inputs returned, `out` what make_output returned, `variant` the catalogue's Variant.
    The optional hooks (plan, PLANS, ERROR_MODELS, ERROR_SCALE, scaled_error, notes) and their
    defaults are FamilyHost's. Per-variant behaviour comes from the manifest's keys, never from a
    variant's name (tests/variants/test_manifest_keys.py renames every variant and checks that nothing changes).
    """

    RATE: str
    """"flop", "bytes", or "link" (bytes across the host link, judged against its bandwidth)."""

    FORMULA: str
    """How the rate is computed, printed under the run table."""

    def make_inputs(self, size: dict[str, int], seed: int) -> dict[str, Any]:
        """Fresh inputs drawn from `seed`, by name."""

    def make_output(self, size: dict[str, int]) -> Any:
        """The output, poisoned (NaN, or a value no correct output holds) so unwritten elements cannot pass."""

    def kernel_args(self, inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
        """The arguments of a one-kernel variant's launch (a variant the family has no plan for)."""

    def reference(self, inputs: dict[str, Any], size: dict[str, int]) -> Any:
        """What the check compares the output with: the correct values, in float64 for a floating-point
        output (or what the module's own scaled_error reads)."""

    def vendor_launch(self, call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]) -> Launch:
        """launch(stream) of a vendor variant; `call` is the manifest's `call` key (which library call)."""

    def flop(self, size: dict[str, int]) -> float:
        """The floating-point operations of one launch (the rate's numerator when RATE is "flop")."""

    def bytes_moved(self, size: dict[str, int]) -> float:
        """The bytes one launch must move at least (the rate's numerator when RATE is "bytes" or "link")."""

    def tolerance(self, variant: Variant, size: dict[str, int]) -> float:
        """The largest scaled error a correct output may have; from the module's documented error
        model, the variant's `precision` and its `error_model` (one of ERROR_MODELS)."""


class Plan(Protocol):
    """The optional `plan` hook, for variants that launch several kernels or need workspace."""

    def __call__(self, variant: Variant, functions: dict[str, Any], inputs: dict[str, Any], out: Any,
                 size: dict[str, int], ctx: LaunchContext) -> Launch:
        """launch(stream) in place of the one-kernel launch from the manifest: `functions` are the
        compiled kernels by name, ctx.grid / ctx.block the manifest's geometry, ctx.sm_count the device's."""


class Notes(Protocol):
    """The optional `notes` hook: a figure across the rows of one run (transfers: the streams' overlap)."""

    def __call__(self, rows: list[Row], family: Family, measured: Any) -> list[str]:
        """Lines printed under the run table; `measured` is the device's measured limits (or None)."""


class Epilogue(Protocol):
    """The optional `epilogue` hook, for a family with named scalars (SCALARS): what a kernel that
    takes them computes, from the family's plain reference (matmul: C = alpha*A*B + beta*C)."""

    def __call__(self, ref: Any, start: Any, scalars: dict[str, float]) -> Any:
        """The reference for these scalar values; `start` is the output's starting values (float64)
        for a kernel that reads its output (reads_output), None otherwise."""


class ScaledError(Protocol):
    """The optional `scaled_error` hook, for an output made of parts on different scales (mnist's
    loss, gradients and updated weights)."""

    def __call__(self, out: Any, ref: Any, size: dict[str, int]) -> tuple[float, int]:
        """(worst scaled error, count of outputs still unwritten), judged against tolerance()."""


def _no_notes(rows: list[Row], family: Family, measured: Any) -> list[str]:
    return []


class FamilyHost:
    """A family module as callers use it: the required hooks passed through, the optional ones
    with their defaults. Attributes are read from the module at each use (tests patch modules)."""

    def __init__(self, module: FamilyModule) -> None:
        self.module = module

    @property
    def RATE(self) -> str:  # upper case as in the modules: constants there
        return self.module.RATE

    @property
    def FORMULA(self) -> str:
        return self.module.FORMULA

    def make_inputs(self, size: dict[str, int], seed: int) -> dict[str, Any]:
        return self.module.make_inputs(size, seed)

    def make_output(self, size: dict[str, int]) -> Any:
        return self.module.make_output(size)

    def kernel_args(self, inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
        return self.module.kernel_args(inputs, out, size)

    def reference(self, inputs: dict[str, Any], size: dict[str, int]) -> Any:
        return self.module.reference(inputs, size)

    def vendor_launch(self, call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]) -> Launch:
        return self.module.vendor_launch(call, inputs, out, size)

    def flop(self, size: dict[str, int]) -> float:
        return self.module.flop(size)

    def bytes_moved(self, size: dict[str, int]) -> float:
        return self.module.bytes_moved(size)

    def tolerance(self, variant: Variant, size: dict[str, int]) -> float:
        return self.module.tolerance(variant, size)

    def class_tolerance(self, variant: Variant, size: dict[str, int], kind: str, bound: float) -> float:
        """The bound on structured `kind` inputs (families/input_classes.py), given the generic one: a
        module's own `class_tolerance` where an error model's rounding leans one way on such inputs
        (softmax's serial sum on alternating rows); the generic bound otherwise."""
        own = getattr(self.module, "class_tolerance", None)
        return bound if own is None else float(own(variant, size, kind, bound))

    def bytes_read(self, size: dict[str, int]) -> float | None:
        """The bytes the op's inputs hold, which every correct launch reads at least once (the rest of
        bytes_moved is written); None (default): not declared, and ncu's byte counts judge nothing."""
        own = getattr(self.module, "bytes_read", None)
        return None if own is None else float(own(size))

    @property
    def plan(self) -> Plan | None:
        """The module's Plan; None (no plan): a kernel variant is one launch of its kernel with kernel_args."""
        return getattr(self.module, "plan", None)

    @property
    def PLANS(self) -> tuple[str, ...]:
        """The values the manifest's `plan` may take, the first the default; () (none): the manifest
        may not name one."""
        return tuple(getattr(self.module, "PLANS", ()))

    @property
    def ERROR_MODELS(self) -> tuple[str, ...]:
        """The values the manifest's `error_model` may take, the first (the safest) the default;
        () (one error model): the manifest may not name one."""
        return tuple(getattr(self.module, "ERROR_MODELS", ()))

    @property
    def ERROR_SCALE(self) -> str:
        """How the check scales an output's error: "rms" (default) against max(|ref_i|, rms(ref));
        "element" each output against its own reference value (outputs that never cancel); "row"
        against max(|ref_i|, rms of its row along the last axis) (rows with scales of their own)."""
        return str(getattr(self.module, "ERROR_SCALE", "rms"))

    @property
    def INPUT_CLASSES(self) -> tuple[str, ...]:
        """Structured inputs (families/input_classes.py) the check also launches the variant on at every
        size, for an op whose output is a statistic of many inputs; () (default): random inputs only."""
        return tuple(getattr(self.module, "INPUT_CLASSES", ()))

    @property
    def EXACT_SUMS(self) -> bool:
        """Whether the output is sums of the inputs and nothing else (reduce, scan): input classes of
        whole numbers are then judged to the exact-sum bound (input_classes.tolerance); False (default)."""
        return bool(getattr(self.module, "EXACT_SUMS", False))

    @property
    def SCALARS(self) -> dict[str, float]:
        """The scalar arguments the family's reference understands, by name, with the values that
        leave its plain operation (matmul: alpha = 1, beta = 0); {} (default): none."""
        return dict(getattr(self.module, "SCALARS", {}))

    def epilogue(self, ref: Any, start: Any, scalars: dict[str, float]) -> Any:
        """The module's Epilogue applied; without one (no SCALARS), the plain reference."""
        own: Epilogue | None = getattr(self.module, "epilogue", None)
        return ref if own is None else own(ref, start, scalars)

    def reads_start(self, scalars: dict[str, float]) -> bool:
        """Whether, with these scalars, the reference depends on the output's starting values
        (matmul: beta != 0), so a kernel taking them must read its output."""
        import numpy as np

        return bool(np.any(self.epilogue(np.zeros(1), np.ones(1), scalars) != 0))

    def output_values(self, out: Any) -> Any:
        """The output as numbers the check compares (the module's `output_values`): a BF16 output is
        held as its 16-bit patterns (CuPy has no bfloat16), decoded to float32 here, NaN poison kept.
        Default: the output itself."""
        own = getattr(self.module, "output_values", None)
        return out if own is None else own(out)

    @property
    def scaled_error(self) -> ScaledError | None:
        """The module's ScaledError, which replaces the check's own scaling; None (default): the
        check scales by ERROR_SCALE."""
        return getattr(self.module, "scaled_error", None)

    def notes(self, rows: list[Row], family: Family, measured: Any) -> list[str]:
        """The module's Notes lines; none (default) when it has no `notes`."""
        own: Notes = getattr(self.module, "notes", _no_notes)
        return own(rows, family, measured)
