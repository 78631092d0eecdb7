"""Whose code a kernel is, from its name alone: a library's (PyTorch's ATen, cuBLAS, cuDNN, CUB,
CUTLASS, CuPy's built-in operations, cuRAND, NCCL, FlashAttention) or the user's (their binary's own
kernels, Triton, NVRTC/CuPy RawKernels, extensions, code generated from their model). The rules are
in docs/kernel-origin.md; anything no rule names a library's is the user's, so a kernel of the
user's is never lost to an incomplete list, only a library kernel may be taken for the user's.
"""

from __future__ import annotations

import re

from gpuprof.parsers.ncu_metrics import kernel_qualified_name

USER, LIBRARY = "user", "library"

# Rule 1: the function's namespace (any level of it) is a library's.
LIBRARY_NAMESPACES = frozenset({
    "at", "c10", "torch", "at_cuda_detail",  # PyTorch (ATen, its CUB copy)
    "cub", "thrust", "cuda", "cute", "cutlass",  # CCCL, CUTLASS (cutlass__5x_cudnn is cuDNN's copy: prefix)
    "cublas", "cublasLt", "cudnn", "cufft", "curand", "cusparse", "cusolver", "nccl",
    "flash", "pytorch_flash", "PyTorchMemEffAttention",  # FlashAttention, PyTorch's memory-efficient attention
})
LIBRARY_NAMESPACE_PREFIXES = ("cutlass", "cudnn", "cublas")

# Rule 2: vendor kernels without a namespace, by the start of the function's name.
LIBRARY_NAME = re.compile(
    r"^(?:sm\d+_xmma_|xmma_|nvjet_|ampere_|volta_|turing_|maxwell_|hopper_|cutlass_|cutlass\d|fmha_cutlass"
    r"|cudnn|cublas|gemv2[NT]_kernel|gemvNSP_kernel|gemmk1_kernel|gemmSN_|splitKreduce_kernel"
    r"|nccl|cupy_|init_curand|execute_dist$|generate_seed_pseudo|curand)")

# Rule 3: PyTorch kernels in an anonymous namespace at the top level (no `at::` to tell them by).
TORCH_UNNAMED = frozenset({"softmax_warp_forward", "softmax_warp_backward", "masked_softmax_warp_forward",
                           "masked_softmax_warp_backward", "elementwise_kernel_with_index"})

_MANGLED_NAMESPACE = re.compile(r"_ZN(?:K)?(\d+)")


def origin(name: str) -> str:
    """USER or LIBRARY for one kernel name as a timeline gives it (demangled, or mangled `_Z...`)."""
    name = name.strip()
    if name.startswith("_Z"):
        return LIBRARY if _mangled_is_library(name) else USER
    parts = kernel_qualified_name(name).split("::")
    namespaces, function = parts[:-1], parts[-1]
    if any(p in LIBRARY_NAMESPACES or p.startswith(LIBRARY_NAMESPACE_PREFIXES) for p in namespaces):
        return LIBRARY
    if LIBRARY_NAME.match(function):
        return LIBRARY
    if namespaces and namespaces[0] in ("{unnamed}", "{anon}") and function in TORCH_UNNAMED:
        return LIBRARY
    if namespaces[:2] == ["internal", "gemvx"]:  # cuBLAS's gemv
        return LIBRARY
    return USER


def is_user(name: str) -> bool:
    return origin(name) == USER


def _mangled_is_library(name: str) -> bool:
    """`_ZN2at6native...` -> the first namespace `at`; mangled names without a namespace (`_Z5scale...`)
    are judged by their function name."""
    m = _MANGLED_NAMESPACE.match(name)
    if m:
        length = int(m.group(1))
        first = name[m.end():m.end() + length]
        return first in LIBRARY_NAMESPACES or first.startswith(LIBRARY_NAMESPACE_PREFIXES)
    m = re.match(r"_Z(\d+)", name)
    if m:
        length = int(m.group(1))
        return bool(LIBRARY_NAME.match(name[m.end():m.end() + length]))
    return False
