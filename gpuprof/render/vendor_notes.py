"""One footnote per vendor row: the library, its version as recorded in the results file's
environment, and the call the family makes (the manifest's `call`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def library(call: str, environment: Mapping[str, Any]) -> str:
    """The library behind a manifest call, with the version the run recorded ('?' where it did not)."""
    libraries = environment.get("libraries") or {}
    torch = environment.get("torch_version") or "?"
    cupy = environment.get("cupy_version") or "?"
    if call.startswith("cub."):
        return f"CUB {libraries.get('cub', '?')} (the CUDA toolkit's headers, built by nvcc)"
    if call.startswith("cupy."):
        return f"CuPy {cupy}'s binding"
    if call.startswith("cufft."):
        return f"cuFFT {libraries.get('cufft', '?')} through CuPy {cupy}"
    if call.startswith("cudnn."):
        return f"cuDNN through PyTorch {torch}"
    if call.startswith("torch.matmul"):
        return f"cuBLAS through PyTorch {torch}"
    if call.startswith("torch."):
        return f"PyTorch {torch}"
    if call.startswith("cuda"):
        return f"the CUDA runtime {environment.get('cuda_runtime') or '?'}"
    return call.split(".", 1)[0]


def vendor_line(rows: list[tuple[str, str]], environment: Mapping[str, Any]) -> str | None:
    """'vendor rows: cub = cub.DeviceScan.InclusiveSum, CUB 3.0.1 (…); torch = …' for (variant, call)
    pairs; None without any."""
    if not rows:
        return None
    return "vendor rows: " + "; ".join(f"{name} = {call}, {library(call, environment)}" for name, call in rows)
