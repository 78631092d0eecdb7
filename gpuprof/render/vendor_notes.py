"""One footnote per vendor row: the library, its version as recorded in the results file's
environment, and the call the family makes (the manifest's `call`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# (call prefix, the library in words): longer prefixes first; {cub}, {cutlass}, {cufft}, {torch}, {cupy} and
# {runtime} are the versions the run recorded, '?' where it did not.
_LIBRARIES = (
    ("cub.", "CUB {cub} (the CUDA toolkit's headers, built by nvcc)"),
    ("cutlass.", "CUTLASS {cutlass} (its headers, built by nvcc)"),
    ("cupy.", "CuPy {cupy}'s binding"),
    ("cufft.", "cuFFT {cufft} through CuPy {cupy}"),
    ("cudnn.", "cuDNN through PyTorch {torch}"),
    ("torch.matmul", "cuBLAS through PyTorch {torch}"),
    ("sdpa.", "scaled_dot_product_attention in PyTorch {torch}, one backend"),
    ("torch.", "PyTorch {torch}"),
    ("cuda", "the CUDA runtime {runtime}"),
)


def library(call: str, environment: Mapping[str, Any]) -> str:
    """The library behind a manifest call, with the version the run recorded ('?' where it did not)."""
    libraries = environment.get("libraries") or {}
    versions = {"cub": libraries.get("cub"), "cutlass": libraries.get("cutlass"), "cufft": libraries.get("cufft"),
                "torch": environment.get("torch_version"), "cupy": environment.get("cupy_version"),
                "runtime": environment.get("cuda_runtime")}
    words = next((text for prefix, text in _LIBRARIES if call.startswith(prefix)), None)
    if words is None and "." not in call:  # a family folder's [op] vendor table names its own function
        return "the family's own function ([op] vendor in its family.toml)"
    if words is None:
        return call.split(".", 1)[0]
    return words.format(**{name: value or "?" for name, value in versions.items()})


def vendor_line(rows: list[tuple[str, str]], environment: Mapping[str, Any]) -> str | None:
    """'vendor rows: cub = cub.DeviceScan.InclusiveSum, CUB 3.0.1 (…); torch = …' for (variant, call)
    pairs; None without any."""
    if not rows:
        return None
    return "vendor rows: " + "; ".join(f"{name} = {call}, {library(call, environment)}" for name, call in rows)
