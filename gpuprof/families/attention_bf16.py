"""attention_bf16: O = softmax(Q·Kᵀ / sqrt(D) [causal mask]) · V, forward, BF16 Q, K, V and O of shape
(B, H, S, D), softmax statistics and accumulation in FP32; the ladder from three kernels through a fused
online softmax on the CUDA cores to FlashAttention-2 on the tensor cores, and PyTorch's SDPA backends."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuprof.errors import EnvironmentProblem
from gpuprof.families import _bf16, _keys, _torch
from gpuprof.families._random import generator
from gpuprof.gpu import cupy
from gpuprof.variants.expressions import evaluate

RATE = "flop"
FORMULA = "TFLOP/s = 4·B·H·S²·D (QKᵀ and P·V, a multiply and an add each), halved when causal, / median time"
# The check draws Q, K and V from one of these per seed: "normal" scores of spread ~1 (a flat softmax,
# where every key counts), "uniform" in [-1, 1), and "peaked": Q scaled by 8, scores of spread ~8, a
# softmax dominated by a few keys whose running maximum changes often (the online rescaling's test).
DISTRIBUTIONS = ("normal", "uniform", "peaked")
PEAKED_SCALE = 8.0
# `plan` in the manifest: "one" (default) one launch on the manifest's grid; "three_kernels" the naive
# scores -> softmax -> P·V through an FP32 workspace of B·H·S² scores (helpers scores, softmax, pv);
# "by_head_dim" the instantiation for the size's head dim (helpers d64, d128); "tma" as "by_head_dim"
# (when the helpers name one per head dim), with the buffers options.tma_box_Q/K/V name passed as TMA
# tensor maps of their (B·H·S) × D views (the kernel's __grid_constant__ parameters).
PLANS = ("one", "three_kernels", "by_head_dim", "tma")
TMA_BUFFERS = ("Q", "K", "V")
# Each query's output is a weighted mean of V's rows with a scale of its own: with the causal mask the
# first queries average a few rows (|o| ~ |v|) and the last thousands (|o| ~ |v| / sqrt(S)), so one rms
# over the whole output would judge the first rows' rounding against the last rows' size. "row": each
# element against max(|ref|, the rms of its query's output row) (measure/check.py).
ERROR_SCALE = "row"


def flop(size: dict[str, int]) -> float:
    full = 4.0 * size["b"] * size["h"] * size["s"] ** 2 * size["d"]
    return full / 2 if size["causal"] else full  # the causal mask skips about half the products


def bytes_read(size: dict[str, int]) -> float:
    return 3 * 2.0 * size["b"] * size["h"] * size["s"] * size["d"]  # Q, K and V, BF16


def bytes_moved(size: dict[str, int]) -> float:
    return bytes_read(size) * 4 / 3  # and O written once


def attention_tolerance() -> float:
    """Bound on |o - ref| / max(|ref|, rms of the query's output row) (ERROR_SCALE "row"), for BF16 inputs
    (exact) and a float64 reference.

    O is a weighted mean of V's rows. Three roundings reach it: the weights P rounded to BF16 before
    the P·V product on the tensor cores (each off by at most u = 2^-8, independently), the FP32
    statistics and exp2 (~1e-6, negligible), and O rounded to BF16 (at most u of |o|). Rounding the
    weights moves o by sum_j dp_j v_j, a random walk about as large, against the row's own size, as
    u/sqrt(3); with the output's rounding the emulation (tests/families/test_tensor_core_tolerances.py)
    sees up to 3.3u over half a million outputs, and the worst of the benchmark's 134 million is a
    few tenths of u more. Bound: 6u = 0.023.

    What it catches: a key tile skipped moves o by a fraction of its row's size (1.6 at S = 4096, 3.4
    at S = 200 in the emulation), a missed rescale by the ratio of the running maxima.
    """
    return 6 * _bf16.UNIT_ROUNDOFF


def tolerance(variant: Any, size: dict[str, int]) -> float:
    return attention_tolerance()


def _shape(size: dict[str, int]) -> tuple[int, int, int, int]:
    return size["b"], size["h"], size["s"], size["d"]


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = generator(seed)
    kind = DISTRIBUTIONS[seed % len(DISTRIBUTIONS)]
    shape = _shape(size)
    if kind == "uniform":
        q, k, v = (rng.uniform(-1.0, 1.0, shape, dtype=cp.float32) for _ in range(3))
    else:
        q, k, v = (rng.standard_normal(shape, dtype=cp.float32) for _ in range(3))
        if kind == "peaked":
            q = q * cp.float32(PEAKED_SCALE)
    return {"Q": _bf16.encode(q), "K": _bf16.encode(k), "V": _bf16.encode(v)}


def make_output(size: dict[str, int]) -> Any:
    return _bf16.poisoned(cupy(), _shape(size))


def output_values(out: Any) -> Any:
    return _bf16.decode(out)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    dims = (np.int32(size[name]) for name in ("b", "h", "s", "d", "causal"))
    return (inputs["Q"], inputs["K"], inputs["V"], out, *dims)


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    """float64 attention, one (batch, head) at a time: the S×S scores of all heads at once would not fit."""
    cp = cupy()
    b, h, s, d = _shape(size)
    q, k, v = (_bf16.decode(inputs[name]).reshape(b * h, s, d) for name in ("Q", "K", "V"))
    out = cp.empty((b * h, s, d), dtype=cp.float64)
    masked = cp.triu(cp.ones((s, s), dtype=bool), 1) if size["causal"] else None
    for i in range(b * h):
        scores = (q[i].astype(cp.float64) @ k[i].astype(cp.float64).T) / np.sqrt(d)
        if masked is not None:
            scores[masked] = -cp.inf
        scores -= scores.max(axis=1, keepdims=True)
        weights = cp.exp(scores)
        weights /= weights.sum(axis=1, keepdims=True)
        out[i] = weights @ v[i].astype(cp.float64)
    return out.reshape(b, h, s, d)


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    chosen = _keys.plan(variant, PLANS)
    if chosen == "three_kernels":
        return _three_kernels(variant, functions, inputs, out, size)
    fn, grid, block, smem = functions[variant.kernel], ctx.grid, ctx.block, ctx.shared_mem
    if chosen == "by_head_dim" or (chosen == "tma" and f"d{size['d']}" in variant.helpers):
        fn = _keys.helper(variant, functions, f"d{size['d']}")
        per_dim = variant.options.get("smem_per_head_dim")  # the instantiation's own shared memory
        if per_dim is not None:
            smem = evaluate(str(per_dim), variant.defines) * size["d"]
        if smem > 48 * 1024:  # opt in per instantiation (the launch factory did so for the main kernel only)
            fn.max_dynamic_shared_size_bytes = smem
    if chosen == "tma":  # built once here (untimed) for the buffers' addresses, fixed for the closure
        from gpuprof.families._tma import tensor_maps  # the driver's library only when a plan needs it

        inputs = {**inputs, **tensor_maps(variant, inputs, TMA_BUFFERS)}
    args = kernel_args(inputs, out, size)

    def launch(stream: Any) -> None:
        fn(grid, block, args, stream=stream, shared_mem=smem)

    return launch


def _three_kernels(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """scores = Q·Kᵀ/sqrt(D) (masked: -inf), softmax of each row in place, O = P·V: three launches
    through an FP32 workspace of B·H·S² scores, allocated here (untimed), as a naive program would.
    Geometry from the defines: SCORE_TILE² threads per score tile, a SOFTMAX_BLOCK block per row,
    PV_BX × PV_BY threads per output tile (x along D)."""
    cp = cupy()
    b, h, s, d = _shape(size)
    causal = np.int32(size["causal"])
    try:
        scores = cp.empty(b * h * s * s, dtype=cp.float32)
    except cp.cuda.memory.OutOfMemoryError:
        raise EnvironmentProblem(f"the naive plan needs {b * h * s * s * 4 / 1e9:.1f} GB of score workspace "
                                 "(B·H·S² floats); run it at a smaller size") from None
    score_fn, softmax_fn, pv_fn = (_keys.helper(variant, functions, role) for role in ("scores", "softmax", "pv"))
    tile, rows_block = variant.defines["SCORE_TILE"], variant.defines["SOFTMAX_BLOCK"]
    pv_x, pv_y = variant.defines["PV_BX"], variant.defines["PV_BY"]
    i32 = (np.int32(b), np.int32(h), np.int32(s), np.int32(d))
    q, k, v = inputs["Q"], inputs["K"], inputs["V"]
    score_grid = (-(-s // tile), -(-s // tile), b * h)
    pv_grid = (-(-d // pv_x), -(-s // pv_y), b * h)

    def launch(stream: Any) -> None:
        score_fn(score_grid, (tile, tile, 1), (q, k, scores, *i32, causal), stream=stream)
        softmax_fn((b * h * s, 1, 1), (rows_block, 1, 1), (scores, *i32[:3], causal), stream=stream)
        pv_fn(pv_grid, (pv_x, pv_y, 1), (scores, v, out, *i32, causal), stream=stream)

    launch.workspace = scores  # type: ignore[attr-defined]  # alive as long as the launch
    return launch


# vendor rows: torch.nn.functional.scaled_dot_product_attention restricted to one backend each.
SDPA_BACKENDS = {"sdpa.flash": "FLASH_ATTENTION", "sdpa.efficient": "EFFICIENT_ATTENTION",
                 "sdpa.cudnn": "CUDNN_ATTENTION", "sdpa.math": "MATH"}


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """SDPA on BF16 views of the buffers with one backend; its result is copied into the output
    (SDPA has no out=): the copy, 2·B·H·S·D bytes each way, is inside the timed launch."""
    if call not in SDPA_BACKENDS:
        raise KeyError(call)
    t = _torch.torch()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, SDPA_BACKENDS[call])
    q, k, v, o = (_bf16.as_torch(x) for x in (inputs["Q"], inputs["K"], inputs["V"], out))
    causal = bool(size["causal"])
    sdpa = t.nn.functional.scaled_dot_product_attention

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream), sdpa_kernel(backend):
            o.copy_(sdpa(q, k, v, is_causal=causal))

    try:  # a backend this machine lacks (cuDNN's needs cuDNN 9, flash needs sm_80+) is said once, here
        with sdpa_kernel(backend):
            sdpa(q[:1, :1, :8], k[:1, :1, :8], v[:1, :1, :8], is_causal=causal)
    except RuntimeError as exc:
        raise EnvironmentProblem(f"SDPA's {SDPA_BACKENDS[call]} backend does not run here: "
                                 f"{str(exc).splitlines()[0]}") from None
    return launch
