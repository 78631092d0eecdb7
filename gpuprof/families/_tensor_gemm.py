"""The host side the 16-bit GEMM families share (gemm_bf16, gemm_fp16): C = A·Bᵀ with 16-bit inputs and
output and FP32 accumulation (A: M×K row-major, B: N×K row-major, the layout of nn.Linear's weight and
cuBLAS's "TN"). One TensorCoreGemm per element format (families/_bf16.py, families/_fp16.py: 16-bit
patterns in uint16 buffers); each family module binds its hooks to one."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from gpuprof.families import _keys, _torch
from gpuprof.families._random import generator
from gpuprof.families._rounding import FP32
from gpuprof.families.op_host import draw
from gpuprof.gpu import cupy

RATE = "flop"
FORMULA = "TFLOP/s = 2·M·N·K (a multiply and an add per term) / median time"
# The check draws A and B from one of these per seed (op_host.draw): uniform, normal, and a clipped
# Cauchy whose rare large values a kernel that drops or reorders terms cannot hide.
DISTRIBUTIONS = ("uniform", "normal", "heavy")
# `plan` in the manifest: "one" (default) launches the kernel with pointers; "tma" passes the buffers
# the variant's `options.tma` names as TMA tensor maps (the kernel's __grid_constant__ parameters).
PLANS = ("one", "tma")
TMA_OPTION = "tma_box_"  # options.tma_box_A = "BM,BK": buffer A passed as a tensor map of BM×BK boxes
# vendor_launch calls (the manifest's `call`): cuBLAS through PyTorch, and CUTLASS's Hopper GEMM built by
# gpuprof from the installed headers (families/_cutlass.py, kernels/gemm_bf16/vendor/cutlass_gemm_tn.cu).
TORCH_CALL = "torch.matmul"
CUTLASS_CALL = "cutlass.gemm.sm90.warp_specialized"


def flop(size: dict[str, int]) -> float:
    return 2.0 * size["m"] * size["n"] * size["k"]


def bytes_read(size: dict[str, int]) -> float:
    return 2.0 * (size["m"] * size["k"] + size["n"] * size["k"])  # A and B, 2 bytes an element


def bytes_moved(size: dict[str, int]) -> float:
    return bytes_read(size) + 2.0 * size["m"] * size["n"]  # and C written once


@dataclass(frozen=True)
class TensorCoreGemm:
    """The hooks of a 16-bit GEMM family for one element format.

    element: the format's module (_bf16 or _fp16: encode, decode, poisoned, as_torch, UNIT_ROUNDOFF);
    heavy_scale: the factor on the heavy-tailed draws, keeping every output inside the format's range;
    tma_data_type: the CUtensorMapDataType of the tensor maps (families/_tma.py);
    cutlass_fp16: whether the CUTLASS row is built for FP16 (-DGEMM_ELEM_FP16) rather than BF16."""

    element: ModuleType
    heavy_scale: float
    tma_data_type: int
    cutlass_fp16: bool

    def dot_tolerance(self, k: int) -> float:
        """2 u + 16 u32 sqrt(K): the output's one rounding to the format (u its unit roundoff) and the
        FP32 accumulation of K products (each family module documents the derivation)."""
        return 2 * self.element.UNIT_ROUNDOFF + 16 * FP32 * math.sqrt(k)

    def tolerance(self, variant: Any, size: dict[str, int]) -> float:
        return self.dot_tolerance(size["k"])

    def make_inputs(self, size: dict[str, int], seed: int) -> dict[str, Any]:
        cp = cupy()
        rng = generator(seed)
        kind = DISTRIBUTIONS[seed % len(DISTRIBUTIONS)]
        scale = self.heavy_scale if kind == "heavy" else 1.0
        m, n, k = size["m"], size["n"], size["k"]
        inputs = {}
        for name, shape in (("A", (m, k)), ("B", (n, k))):
            values = draw(rng, cp, kind, shape)
            inputs[name] = self.element.encode(values if scale == 1.0 else values * cp.float32(scale))
        return inputs

    def make_output(self, size: dict[str, int]) -> Any:
        return self.element.poisoned(cupy(), (size["m"], size["n"]))

    def output_values(self, out: Any) -> Any:
        return self.element.decode(out)

    def kernel_args(self, inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
        return (inputs["A"], inputs["B"], out, np.int32(size["m"]), np.int32(size["n"]), np.int32(size["k"]))

    def reference(self, inputs: dict[str, Any], size: dict[str, int]) -> Any:
        cp = cupy()
        a, b = (self.element.decode(inputs[name]).astype(cp.float64) for name in ("A", "B"))
        return a @ b.T

    def plan(self, variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any,
             size: dict[str, int], ctx: Any):
        """One launch of the main kernel on the manifest's grid; plan "tma" passes tensor maps in place of
        the buffers its options name (tma_box_A = "BM,BK": rows and columns of the box over the defines),
        built once here (the untimed set-up) for the buffers' addresses, which stay fixed for the launch
        closure."""
        passed = {**inputs, **self._tensor_maps(variant, inputs)} if _keys.plan(variant, PLANS) == "tma" else inputs
        args = self.kernel_args(passed, out, size)
        fn, grid, block, smem = functions[variant.kernel], ctx.grid, ctx.block, ctx.shared_mem

        def launch(stream: Any) -> None:
            fn(grid, block, args, stream=stream, shared_mem=smem)

        return launch

    def _tensor_maps(self, variant: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        """The tensor map of each buffer (A, B) the variant's options name, by buffer name."""
        from gpuprof.families._tma import tensor_maps  # the driver's library only when a plan needs it

        return tensor_maps(variant, inputs, ("A", "B"), data_type=self.tma_data_type)

    def vendor_launch(self, call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
        """call "torch.matmul": cuBLAS's GEMM through PyTorch, C = A @ B.T into the output (B.T is a
        transposed view: cuBLAS reads B as it is stored, no copy), split-K partial sums kept in FP32.
        CUTLASS_CALL: CUTLASS's Hopper GEMM, the fastest of its configurations at this size."""
        if call == CUTLASS_CALL:
            from gpuprof.families._cutlass import cutlass_sm90_gemm

            return cutlass_sm90_gemm(inputs["A"], inputs["B"], out, size["m"], size["n"], size["k"],
                                     fp16=self.cutlass_fp16)
        if call != TORCH_CALL:
            raise KeyError(call)
        t = _torch.torch()
        a, b, c = (self.element.as_torch(x) for x in (inputs["A"], inputs["B"], out))

        def launch(stream: Any) -> None:
            _torch.full_precision_reduction()  # FP32 accumulation, as the rungs and the tolerance assume
            with _torch.on_stream(stream):
                t.matmul(a, b.t(), out=c)

        return launch
