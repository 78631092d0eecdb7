"""gemm_bf16: C = A·Bᵀ with BF16 inputs and output and FP32 accumulation (A: M×K row-major, B: N×K
row-major, the layout of nn.Linear's weight and cuBLAS's "TN"); the tensor-core ladder from a naive
CUDA-core kernel through WMMA and mma.sync to Hopper's wgmma with TMA, against cuBLAS and CUTLASS.
The hooks are families/_tensor_gemm.py's, bound to BF16 (gemm_fp16 binds the same to FP16)."""

from __future__ import annotations

from gpuprof.families import _bf16
from gpuprof.families._tensor_gemm import (  # noqa: F401 (the family's hooks and constants)
    DISTRIBUTIONS,
    FORMULA,
    PLANS,
    RATE,
    TMA_OPTION,
    TensorCoreGemm,
    bytes_moved,
    bytes_read,
    flop,
)
from gpuprof.families._tma import CU_TENSOR_MAP_DATA_TYPE_BFLOAT16

GEMM = TensorCoreGemm(_bf16, heavy_scale=1.0, tma_data_type=CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, cutlass_fp16=False)


def dot_tolerance(k: int) -> float:
    """Bound on the scaled error of one output, |c - ref| / max(|ref|, rms(ref)), for BF16 inputs.

    The inputs are exactly BF16 and the reference is their float64 product, so no input rounding
    counts. The output is rounded once to BF16: at most u_bf16 = 2^-8 of |ref| (scaled: at most
    2^-8, and outputs reach it: 3.7e-3 is seen at K = 65). The FP32 accumulation of K products adds
    the FP32 family's bound, 8 u32 sqrt(K) (matmul's dot_tolerance); tensor cores add their partial
    sums in FP32 too. Bound: 2 u_bf16 + 16 u32 sqrt(K), 7.9e-3 at K = 8192
    (tests/families/test_tensor_core_tolerances.py replays it in float32 emulation).

    What it catches: one product missing (an off-by-one at a K tile's edge) moves an output by
    |a b| ~ 0.25 against rms sqrt(K)/3 for uniform inputs: 0.09 at the check sizes' K = 65 and 0.023
    at K = 1024, 3x the bound or more; at K = 8192 (8e-3) it is within it, which is why the check
    sizes are where off-by-ones are judged. Accumulating in BF16 instead of FP32 fails at large K.
    """
    return GEMM.dot_tolerance(k)


tolerance = GEMM.tolerance
make_inputs = GEMM.make_inputs
make_output = GEMM.make_output
output_values = GEMM.output_values
kernel_args = GEMM.kernel_args
reference = GEMM.reference
plan = GEMM.plan
vendor_launch = GEMM.vendor_launch
