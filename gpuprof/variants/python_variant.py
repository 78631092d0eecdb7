"""Python variants from any framework (CuPy RawKernel/RawModule, a PyTorch C++/CUDA extension,
Numba CUDA, Triton): a .py file whose entry point, `make_launch(inputs, out, size)`, receives the
family's CuPy buffers and sizes and returns `launch(stream)`. gpuprof imports the file by path (once
per file), calls the entry point once per size, and runs `launch` under the same check, timing,
integrity audits, NVTX ranges, ncu and compute-sanitizer as a built-in variant.

The stream guarantee: `launch(stream)` is called with gpuprof's CuPy stream *made current* for CuPy
and, where the file imported PyTorch, for PyTorch (an ExternalStream on the same handle): CuPy
kernels and array ops, torch ops, `load_inline` extensions that launch on
`at::cuda::getCurrentCUDAStream()`, and Triton all land on the timed stream without naming it.
Numba has no current stream; pass `cuda.external_stream(stream.ptr)` to the launch. Work that still
lands elsewhere is caught by measure/integrity.py's off-stream audit (the row is IMPOSSIBLE).
See docs/python-variants.md."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from gpuprof.errors import EnvironmentProblem, GpuprofError, InputError, UsageError
from gpuprof.variants.catalog import Variant
from gpuprof.variants.nvrtc import display_path

ENTRY_POINT = "make_launch"
ENTRY_PARAMS = "(inputs, out, size)"

Launch = Callable[[Any], None]
LaunchFor = Callable[[dict[str, Any], Any, dict[str, int]], Launch]

_modules: dict[Path, ModuleType] = {}


def entry_point_line(path: Path, source: str, entry: str) -> int:
    """The line of `def ENTRY(...)` at the file's top level, checked without importing the file (which
    would import its framework): it must exist and take the three arguments (inputs, out, size)."""
    shown = display_path(path)
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise InputError(f"{shown}:{exc.lineno or 1}: not valid Python: {exc.msg}") from None
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    node = functions.get(entry)
    if node is None:
        hint = f"; found: {', '.join(functions)}" if functions else ""
        raise UsageError(f"{shown} has no top-level function {entry}{ENTRY_PARAMS} returning launch(stream)"
                         f"{hint}; name it: --add {path.name}:FUNCTION")
    positional = [*node.args.posonlyargs, *node.args.args]
    if node.args.vararg is None and (len(positional) < 3 or len(positional) - len(node.args.defaults) > 3):
        raise InputError(f"{shown}:{node.lineno}: {entry} takes ({', '.join(a.arg for a in positional)}); "
                         f"gpuprof calls it as {entry}{ENTRY_PARAMS}")
    return node.lineno


def load_module(path: Path, requires: Callable[[], object] | None = None, entry: str = ENTRY_POINT) -> ModuleType:
    """The .py file imported by path, once per file (Triton's JIT, CuPy's RawModule and
    load_inline cache their compiled kernels on the module's objects: a second import would compile
    everything again). requires: called first, raises EnvironmentProblem when the framework the
    language names is missing (Triton)."""
    path = path.resolve()
    if path in _modules:
        return _modules[path]
    if requires is not None:
        requires()
    shown = display_path(path)
    if not path.is_file():
        raise InputError(f"{shown}: no such file")
    # A unique module name per file: two families may both have triton_softmax.py-like names.
    name = f"gpuprof_variant_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"{shown}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # @triton.jit, numba and dataclasses look their module up here
    no_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ beside kernels
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:
        del sys.modules[name]
        raise EnvironmentProblem(f"{shown} needs the Python module '{exc.name}', which is not installed") from None
    except GpuprofError:
        del sys.modules[name]
        raise
    except Exception as exc:  # noqa: BLE001 -- a syntax error or a failing top level: one line, not a traceback
        del sys.modules[name]
        where = f":{exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else _line_in(exc, path)
        raise InputError(f"{shown}{where} cannot be imported: {type(exc).__name__}: {first_line(exc)}") from None
    finally:
        sys.dont_write_bytecode = no_bytecode
    if not callable(getattr(module, entry, None)):
        del sys.modules[name]
        raise InputError(f"{shown} has no function {entry}{ENTRY_PARAMS} returning launch(stream); "
                         "a Python variant must define one")
    _modules[path] = module
    return module


def launch_factory(variant: Variant, requires: Callable[[], object] | None = None) -> LaunchFor:
    """launch_for(inputs, out, size) -> launch(stream) for one Python variant. Importing the file
    here (not at the first launch) makes a missing framework a SKIPPED row before any check."""
    if variant.file is None:
        raise ValueError(f"{variant.name} is not a Python variant; it has no .py file")
    entry = variant.entry
    module = load_module(variant.file, requires, entry)
    path = variant.file.resolve()
    shown = display_path(variant.file)

    def launch_for(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> Launch:
        try:
            launch = getattr(module, entry)(inputs, out, size)
        except Exception as exc:  # noqa: BLE001 -- the user's code: one line with their file:line
            raise _user_error(exc, path, shown, f"{entry}() raised") from None
        if not callable(launch):
            raise InputError(f"{shown}: {entry}() returned {type(launch).__name__}, not a launch(stream) function")
        return _on_current_streams(launch, path, shown)

    return launch_for


def _on_current_streams(launch: Launch, path: Path, shown: str) -> Launch:
    """launch(stream) with `stream` current for CuPy and PyTorch, its errors one line each."""
    torch_streams: dict[int, Any] = {}  # one ExternalStream per handle: made once, not per launch

    def launch_current(stream: Any) -> None:
        try:
            with current_stream(stream, torch_streams):
                launch(stream)
        except Exception as exc:  # noqa: BLE001 -- sorted below: a fault stays a fault, the rest is one line
            _raise_fault_if_any()
            raise _user_error(exc, path, shown, "launch() raised") from None

    return launch_current


@contextmanager
def current_stream(stream: Any, torch_streams: dict[int, Any] | None = None) -> Iterator[None]:
    """`stream` (a CuPy stream) current for CuPy and, where PyTorch is imported, for PyTorch."""
    with ExitStack() as stack:
        if hasattr(stream, "__enter__"):
            stack.enter_context(stream)  # CuPy: RawKernel calls and array ops without stream= go here
        torch = sys.modules.get("torch")
        if torch is not None and getattr(stream, "ptr", None) is not None and torch.cuda.is_available():
            cache = torch_streams if torch_streams is not None else {}
            if stream.ptr not in cache:
                cache[stream.ptr] = torch.cuda.ExternalStream(stream.ptr)
            stack.enter_context(torch.cuda.stream(cache[stream.ptr]))
        yield


def _raise_fault_if_any() -> None:
    """A framework's own CUDA error (torch's RuntimeError, Numba's CudaAPIError) after an illegal
    address has poisoned the context: CuPy's synchronize raises it as CuPy's CUDA error, which the
    runner turns into a FAULT row (and a fresh worker) like a CUDA variant's."""
    cp = sys.modules.get("cupy")
    try:
        usable = cp is not None and cp.cuda.is_available()
    except Exception:  # noqa: BLE001 -- no driver: there is no context to be poisoned
        usable = False
    if usable:
        cp.cuda.Device().synchronize()  # type: ignore[union-attr]


def _user_error(exc: BaseException, path: Path, shown: str, what: str) -> GpuprofError:
    if isinstance(exc, GpuprofError):
        return exc
    triton = sys.modules.get("triton")
    errors = getattr(triton, "errors", None) if triton is not None else None
    if errors is not None and isinstance(exc, getattr(errors, "TritonError", ())):
        return InputError(f"{shown}: Triton {triton.__version__} cannot compile or launch it: "  # type: ignore[union-attr]
                          f"{triton_reason(exc)}")
    return InputError(f"{shown}{_line_in(exc, path)}: {what} {type(exc).__name__}: {first_line(exc)}")


def _line_in(exc: BaseException, path: Path) -> str:
    """':LINE' of the innermost frame of the traceback that is in the user's file, or ''."""
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if frame.filename and Path(frame.filename).resolve() == path]
    return f":{lines[-1]}" if lines else ""


def triton_reason(exc: BaseException) -> str:
    """A CompilationError's own message (its str() is the source excerpt), else the first line."""
    message = getattr(exc, "error_message", None)
    lineno = getattr(getattr(exc, "node", None), "lineno", None)
    if message:
        where = f" (line {lineno} of the @triton.jit function)" if lineno else ""
        lines = [line.strip() for line in str(message).splitlines() if line.strip()]
        return f"{type(exc).__name__}{where}: {lines[-1] if lines else message}"
    return f"{type(exc).__name__}: {first_line(exc)}"


def first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else "no message"


def user_variant(path: Path, source: str, entry: str | None, geometry: dict[str, object]) -> Variant:
    """The Variant for `--add FILE.py[:FUNCTION]`: the entry point checked without importing the
    file; --block/--tile/--grid (geometry, as typed) are refused, the launch is the file's own."""
    given = [f"--{option}" for option, value in geometry.items() if value]
    if given:
        raise UsageError(f"{given[0]} does not apply to {display_path(path)}: a Python variant launches its "
                         f"kernels itself, with the geometry make_launch gives them")
    entry = entry or ENTRY_POINT
    if not entry.isidentifier():
        raise UsageError(f"--add {path}:{entry}: '{entry}' is not a Python function name")
    entry_point_line(path, source, entry)
    return Variant(name=path.stem, technique=f"your variant ({path.name})", language="python",
                   file=path.resolve(), entry=entry, user=True)
