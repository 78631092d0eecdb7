"""Triton variants: a .py file (e.g. kernels/softmax/triton_softmax.py) whose
make_launch(inputs, out, size) returns launch(stream), imported by path (once per file) and run by
the same check and timing engine as the CUDA variants. Triton is imported lazily: where it is
missing, the variant is SKIPPED with the reason (EnvironmentProblem), like a vendor variant
without PyTorch."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from gpuprof.errors import EnvironmentProblem, InputError
from gpuprof.variants.catalog import Variant
from gpuprof.variants.nvrtc import display_path

ENTRY_POINT = "make_launch"

_modules: dict[Path, ModuleType] = {}

Launch = Callable[[Any], None]


def require_triton() -> ModuleType:
    try:
        import triton
    except ImportError:
        raise EnvironmentProblem(
            "Triton is not installed; the Triton variants need it and PyTorch (pip install triton)"
        ) from None
    return triton


def load_module(path: Path) -> ModuleType:
    """The .py file imported by path, once per file (Triton's JIT caches compiled kernels on the
    module's functions, so a second import would compile everything again)."""
    path = path.resolve()
    if path in _modules:
        return _modules[path]
    require_triton()
    shown = display_path(path)
    if not path.is_file():
        raise InputError(f"{shown}: no such file")
    # A unique module name per file: two families may both have triton_softmax.py-like names.
    name = f"gpuprof_triton_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"{shown}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # @triton.jit and dataclasses look their module up here
    no_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ in kernels/
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:
        del sys.modules[name]
        raise EnvironmentProblem(f"{shown} needs the Python module '{exc.name}', which is not installed") from None
    except Exception as exc:  # noqa: BLE001 -- a syntax error or a failing top level: one line, not a traceback
        del sys.modules[name]
        where = f":{exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise InputError(f"{shown}{where} cannot be imported: {type(exc).__name__}: {_first_line(exc)}") from None
    finally:
        sys.dont_write_bytecode = no_bytecode
    if not callable(getattr(module, ENTRY_POINT, None)):
        del sys.modules[name]
        raise InputError(f"{shown} has no function {ENTRY_POINT}(inputs, out, size) returning launch(stream); "
                         "a Triton variant must define one")
    _modules[path] = module
    return module


def launch_factory(variant: Variant) -> Callable[[dict[str, Any], Any, dict[str, int]], Launch]:
    """launch_for(inputs, out, size) -> launch(stream) for one Triton variant. Importing the file
    here (not at the first launch) makes a missing Triton a SKIPPED row before any check."""
    if variant.file is None:
        raise ValueError(f"{variant.name} is not a Triton variant; it has no .py file")
    module = load_module(variant.file)
    shown = display_path(variant.file)

    def launch_for(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> Launch:
        launch = getattr(module, ENTRY_POINT)(inputs, out, size)
        if not callable(launch):
            raise InputError(
                f"{shown}: {ENTRY_POINT}() returned {type(launch).__name__}, not a launch(stream) function")
        return _one_line_errors(launch, shown)

    return launch_for


def _one_line_errors(launch: Launch, shown: str) -> Launch:
    """Triton compiles at the first launch; its compile, ptxas and resource errors span many lines."""
    triton = require_triton()
    from triton.errors import TritonError

    def launch_checked(stream: Any) -> None:
        try:
            launch(stream)
        except TritonError as exc:
            raise InputError(
                f"{shown}: Triton {triton.__version__} cannot compile or launch it: {_triton_reason(exc)}") from None

    return launch_checked


def _triton_reason(exc: BaseException) -> str:
    """A CompilationError's own message (its str() is the source excerpt), else the first line."""
    message = getattr(exc, "error_message", None)
    lineno = getattr(getattr(exc, "node", None), "lineno", None)
    if message:
        where = f" (line {lineno} of the @triton.jit function)" if lineno else ""
        lines = [line.strip() for line in str(message).splitlines() if line.strip()]
        return f"{type(exc).__name__}{where}: {lines[-1] if lines else message}"
    return f"{type(exc).__name__}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else "no message"
