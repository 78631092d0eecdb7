"""Triton variants (language = "triton", e.g. kernels/softmax/triton_softmax.py): Python variants
(variants/python_variant.py) that need Triton. Triton is imported lazily: where it is missing, the
variant is SKIPPED with the reason (EnvironmentProblem), like a vendor variant without PyTorch.
Triton's compile errors (it compiles at the first launch) become one line there."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from gpuprof.errors import EnvironmentProblem
from gpuprof.variants import python_variant
from gpuprof.variants.catalog import Variant

ENTRY_POINT = python_variant.ENTRY_POINT


def require_triton() -> ModuleType:
    try:
        import triton
    except ImportError:
        raise EnvironmentProblem(
            "Triton is not installed; the Triton variants need it and PyTorch (pip install triton)"
        ) from None
    return triton


def load_module(path: Path) -> ModuleType:
    """The .py file imported by path, once per file, after checking that Triton is there."""
    return python_variant.load_module(path, lambda: require_triton())


def launch_factory(variant: Variant) -> python_variant.LaunchFor:
    """launch_for(inputs, out, size) -> launch(stream) for one Triton variant."""
    return python_variant.launch_factory(variant, lambda: require_triton())
