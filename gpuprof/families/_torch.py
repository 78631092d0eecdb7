"""PyTorch for vendor and Triton variants: imported lazily, sharing CuPy's buffers and stream."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from gpuprof.errors import EnvironmentProblem


def torch() -> ModuleType:
    try:
        import torch as t
    except ImportError:
        raise EnvironmentProblem(
            "PyTorch is not installed; the vendor and Triton variants use it (pip install torch)") from None
    if not t.cuda.is_available():
        raise EnvironmentProblem(
            "PyTorch cannot see a CUDA GPU; install a CUDA build of torch for vendor and Triton variants")
    return t


def as_tensor(array: Any) -> Any:
    """Zero-copy view of a CuPy array as a torch tensor (DLPack)."""
    return torch().from_dlpack(array)


def set_tf32(enabled: bool) -> None:
    """TF32 on or off for cuBLAS matmuls and cuDNN convolutions. These are global switches in torch:
    vendor variants set them on every call, never leaving them to whatever ran before."""
    t = torch()
    mode = "tf32" if enabled else "ieee"
    matmul = t.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):  # torch >= 2.9; allow_tf32 is deprecated there
        matmul.fp32_precision = mode
    else:
        matmul.allow_tf32 = enabled
    conv = getattr(t.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):
        conv.fp32_precision = mode
    else:
        t.backends.cudnn.allow_tf32 = enabled


def full_precision_reduction() -> None:
    """cuBLAS's FP16 and BF16 GEMMs with FP32 accumulation throughout: PyTorch lets them sum split-K
    partial results in the 16-bit type unless told not to (allow_*_reduced_precision_reduction, on by
    default). Global switches: vendor variants set them on every call."""
    matmul = torch().backends.cuda.matmul
    for flag in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        if hasattr(matmul, flag):
            setattr(matmul, flag, False)


@contextmanager
def on_stream(stream: Any) -> Iterator[None]:
    """Run torch ops on the CuPy stream, so events and graphs around them see them."""
    t = torch()
    with t.cuda.stream(t.cuda.ExternalStream(stream.ptr)):
        yield
