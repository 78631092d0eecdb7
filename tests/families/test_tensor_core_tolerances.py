"""The tensor-core families' error models (gemm_bf16, gemm_fp16, attention_bf16), replayed on the CPU: BF16
and FP16 values held as 16-bit patterns, the kernels' orders of operations emulated in float32 with numpy, each output
judged against float64 by gpuprof's own scaled_error. Correct orders pass inside the tolerance; planted
faults (a missing product, a skipped key tile, a missed rescale, 16-bit accumulation) fail it. Seeded."""

from __future__ import annotations

import numpy as np
import pytest

from gpuprof.families import _bf16, _fp16, attention_bf16, gemm_bf16, gemm_fp16
from gpuprof.measure.check import scaled_error


def bf16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to BF16 and back (what a kernel stores)."""
    return _bf16.decode(_bf16.encode(values.astype(np.float32)))


def fp16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to FP16 and back."""
    return _fp16.decode(_fp16.encode(values.astype(np.float32)))


def draw(kind: str, shape: tuple[int, ...], rng: np.random.Generator, rounding=bf16, heavy_scale: float = 1.0):
    if kind == "uniform":
        x = rng.uniform(-1, 1, shape)
    elif kind == "normal":
        x = rng.standard_normal(shape)
    else:  # heavy: a clipped Cauchy, as op_host.draw, scaled as the family's make_inputs scales it
        x = np.clip(rng.standard_normal(shape) / rng.standard_normal(shape), -64, 64) * heavy_scale
    return rounding(x.astype(np.float32))


# ---- BF16 patterns -----------------------------------------------------------------------------

def test_encode_rounds_to_nearest_even_and_decode_is_exact():
    one_plus_half_ulp = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, -2.5, 3.0e38], dtype=np.float32)
    patterns = _bf16.encode(one_plus_half_ulp)
    assert patterns.dtype == np.uint16
    # a tie goes to the even pattern: 1 + 2^-8 -> 1.0, 1 + 3*2^-8 -> 1 + 2^-6
    assert list(_bf16.decode(patterns)[:3]) == [1.0, 1 + 2.0**-6, -2.5]
    values = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    once = bf16(values)
    assert np.array_equal(bf16(once), once)  # a BF16 value is encoded exactly
    assert np.max(np.abs(once - values) / np.abs(values)) <= _bf16.UNIT_ROUNDOFF


def test_nan_pattern_decodes_to_nan():
    assert np.isnan(_bf16.decode(np.array([_bf16.NAN], dtype=np.uint16)))[0]
    assert np.isnan(_fp16.decode(np.array([_fp16.NAN], dtype=np.uint16)))[0]


def test_fp16_encode_rounds_to_nearest_even_with_the_ieee_patterns():
    values = np.array([1.0, -2.0, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 65504.0, 65520.0, 2.0**-24], dtype=np.float32)
    with np.errstate(over="ignore"):  # 65520 overflows on purpose
        patterns = _fp16.encode(values)
    assert patterns.dtype == np.uint16
    # 1.0 = 0x3C00, -2.0 = 0xC000; ties to even; 65520 rounds past the largest finite value to infinity
    assert list(patterns[:2]) == [0x3C00, 0xC000]
    assert list(_fp16.decode(patterns)) == [1.0, -2.0, 1.0, 1 + 2.0**-9, _fp16.LARGEST, np.inf, 2.0**-24]
    normal = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    once = fp16(normal)
    assert np.array_equal(fp16(once), once)
    assert np.max(np.abs(once - normal) / np.abs(normal)) <= _fp16.UNIT_ROUNDOFF


# ---- GEMM ----------------------------------------------------------------------------------------

def tensor_core_gemm(a: np.ndarray, b: np.ndarray, *, chunk: int = 16, drop: int | None = None,
                     bf16_accumulate: bool = False, rounding=bf16) -> np.ndarray:
    """C = A·Bᵀ as an mma does it: exact products summed 16 at a time in FP32, added to an FP32
    accumulator, rounded to the 16-bit format (`rounding`) once at the end. drop: a K index left out
    (an off-by-one); bf16_accumulate: the accumulator rounded to the 16-bit format after every step
    (a wrong accumulator type)."""
    acc = np.zeros((a.shape[0], b.shape[0]), dtype=np.float32)
    for start in range(0, a.shape[1], chunk):
        cols = [k for k in range(start, min(start + chunk, a.shape[1])) if k != drop]
        acc = (acc + a[:, cols] @ b[:, cols].T).astype(np.float32)
        if bf16_accumulate:
            acc = rounding(acc)
    return rounding(acc)


def gemm_error(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    err, unwritten = scaled_error(c, a.astype(np.float64) @ b.astype(np.float64).T)
    assert unwritten == 0
    return err


@pytest.mark.parametrize("kind", ["uniform", "normal", "heavy"])
@pytest.mark.parametrize("k", [65, 300, 1024, 4096])
def test_gemm_correct_order_passes(kind, k):
    rng = np.random.default_rng(k)
    a, b = draw(kind, (48, k), rng), draw(kind, (40, k), rng)
    assert gemm_error(tensor_core_gemm(a, b), a, b) < gemm_bf16.dot_tolerance(k) / 1.5


@pytest.mark.parametrize("k", [65, 300, 1024])
def test_gemm_missing_product_fails(k):
    rng = np.random.default_rng(1)
    a, b = draw("uniform", (48, k), rng), draw("uniform", (40, k), rng)
    assert gemm_error(tensor_core_gemm(a, b, drop=k // 2), a, b) > 2 * gemm_bf16.dot_tolerance(k)


def test_gemm_bf16_accumulation_fails_at_large_k():
    rng = np.random.default_rng(2)
    k = 4096
    a, b = draw("uniform", (32, k), rng), draw("uniform", (32, k), rng)
    assert gemm_error(tensor_core_gemm(a, b, bf16_accumulate=True), a, b) > 2 * gemm_bf16.dot_tolerance(k)


def test_gemm_counts():
    size = {"m": 8192, "n": 4096, "k": 1024}
    assert gemm_bf16.flop(size) == 2 * 8192 * 4096 * 1024
    assert gemm_bf16.bytes_read(size) == 2 * (8192 * 1024 + 4096 * 1024)
    assert gemm_bf16.bytes_moved(size) == gemm_bf16.bytes_read(size) + 2 * 8192 * 4096


# ---- GEMM in FP16: 3 more significant bits, a range ending at 65504 ------------------------------

def fp16_inputs(kind: str, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return tuple(draw(kind, (rows, k), rng, fp16, gemm_fp16.HEAVY_SCALE) for rows in (48, 40))  # type: ignore


@pytest.mark.parametrize("kind", ["uniform", "normal", "heavy"])
@pytest.mark.parametrize("k", [65, 300, 1024, 4096])
def test_fp16_gemm_correct_order_passes(kind, k):
    a, b = fp16_inputs(kind, k, seed=k)
    assert gemm_error(tensor_core_gemm(a, b, rounding=fp16), a, b) < gemm_fp16.dot_tolerance(k) / 1.5


@pytest.mark.parametrize("k", [65, 300, 1024, 8192])
def test_fp16_gemm_missing_product_fails_even_at_the_benchmark_depth(k):
    a, b = fp16_inputs("uniform", k, seed=1)
    assert gemm_error(tensor_core_gemm(a, b, drop=k // 2, rounding=fp16), a, b) > 2 * gemm_fp16.dot_tolerance(k)


def test_fp16_gemm_fp16_accumulation_fails_at_large_k():
    a, b = fp16_inputs("uniform", 4096, seed=2)
    c = tensor_core_gemm(a, b, bf16_accumulate=True, rounding=fp16)
    assert gemm_error(c, a, b) > 2 * gemm_fp16.dot_tolerance(4096)


def test_fp16_gemm_bf16_output_rounding_fails():
    """A kernel that stores BF16 where FP16 is asked for (the wrong element type) fails FP16's bound."""
    a, b = fp16_inputs("normal", 1024, seed=3)
    assert gemm_error(bf16(tensor_core_gemm(a, b, rounding=fp16)), a, b) > 2 * gemm_fp16.dot_tolerance(1024)


def test_fp16_bound_is_eight_times_tighter_than_bf16s_and_grows_with_k():
    assert gemm_fp16.dot_tolerance(1) == pytest.approx(2 * 2.0**-11 + 16 * 2.0**-24)
    assert gemm_bf16.dot_tolerance(65) / gemm_fp16.dot_tolerance(65) == pytest.approx(8, rel=0.02)
    assert gemm_fp16.dot_tolerance(8192) > gemm_fp16.dot_tolerance(1024)


def test_scaled_heavy_inputs_keep_fp16_outputs_finite_where_unscaled_ones_approach_the_limit():
    """512x512 outputs at K = 8192: unscaled heavy draws reach past half of 65504 (an 8192² product
    would cross it), the family's 2^-3 scale keeps them ~64x below."""
    rng = np.random.default_rng(5)
    raw = [np.clip(rng.standard_normal((512, 8192)) / rng.standard_normal((512, 8192)), -64, 64) for _ in range(2)]
    unscaled = np.abs(raw[0] @ raw[1].T).max()
    scaled = np.abs((raw[0] * gemm_fp16.HEAVY_SCALE) @ (raw[1] * gemm_fp16.HEAVY_SCALE).T).max()
    assert unscaled > _fp16.LARGEST / 2
    assert scaled < _fp16.LARGEST / 50


def test_fp16_counts_are_bf16s():
    size = {"m": 8192, "n": 4096, "k": 1024}
    assert (gemm_fp16.flop(size), gemm_fp16.bytes_moved(size)) == (gemm_bf16.flop(size), gemm_bf16.bytes_moved(size))


# ---- attention -----------------------------------------------------------------------------------

def attention64(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    s = q.shape[0]
    scores = (q.astype(np.float64) @ k.astype(np.float64).T) / np.sqrt(q.shape[1])
    if causal:
        scores[np.triu(np.ones((s, s), dtype=bool), 1)] = -np.inf
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


def flash2(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, *, tile: int = 64,
           skip_tile: int | None = None, rescale: bool = True) -> np.ndarray:
    """FlashAttention-2's order in float32: per key tile, scores in FP32, the running max m and sum l,
    P = exp2((s - m) log2 e) rounded to BF16 for the P·V product, O rescaled by exp(m_old - m_new);
    O / l rounded to BF16 at the end. skip_tile / rescale=False plant the faults."""
    s_len, d = q.shape
    scale = np.float32(1 / np.sqrt(d))
    m = np.full(s_len, -np.inf, dtype=np.float32)
    l_sum = np.zeros(s_len, dtype=np.float32)
    o = np.zeros((s_len, d), dtype=np.float32)
    for number, start in enumerate(range(0, s_len, tile)):
        if number == skip_tile:
            continue
        keys = slice(start, min(start + tile, s_len))
        scores = (q @ k[keys].T).astype(np.float32) * scale
        if causal:
            scores[np.arange(s_len)[:, None] < np.arange(start, keys.stop)[None, :]] = -np.inf
        m_new = np.maximum(m, scores.max(axis=1))
        safe = np.where(np.isinf(m_new), 0, m_new).astype(np.float32)
        p = np.exp(scores - safe[:, None]).astype(np.float32)
        alpha = np.exp(np.where(np.isinf(m), -np.inf, m - safe)).astype(np.float32) if rescale else 1
        l_sum = (alpha * l_sum + p.sum(axis=1)).astype(np.float32)
        o = (o * (alpha if np.isscalar(alpha) else alpha[:, None]) + bf16(p) @ v[keys]).astype(np.float32)
        m = m_new
    return bf16(o / l_sum[:, None])


def attention_error(o: np.ndarray, q, k, v, causal) -> float:
    err, unwritten = scaled_error(o, attention64(q, k, v, causal), attention_bf16.ERROR_SCALE)
    assert unwritten == 0
    return err


def qkv(kind: str, s: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q, k, v = (draw("uniform" if kind == "uniform" else "normal", (s, d), rng) for _ in range(3))
    if kind == "peaked":
        q = bf16(q * attention_bf16.PEAKED_SCALE)
    return q, k, v


@pytest.mark.parametrize("kind", attention_bf16.DISTRIBUTIONS)
@pytest.mark.parametrize(("s", "d", "causal"), [(77, 64, False), (200, 128, True), (129, 128, False),
                                                 (1024, 128, False), (1024, 64, True)])
def test_attention_flash_order_passes(kind, s, d, causal):
    q, k, v = qkv(kind, s, d, seed=s + d)
    assert attention_error(flash2(q, k, v, causal), q, k, v, causal) < attention_bf16.attention_tolerance() / 1.5


@pytest.mark.parametrize(("s", "d", "causal"), [(77, 64, False), (200, 128, True), (129, 128, False)])
def test_attention_skipped_key_tile_fails(s, d, causal):
    q, k, v = qkv("normal", s, d, seed=3)
    assert attention_error(flash2(q, k, v, causal, skip_tile=1), q, k, v, causal) > \
        2 * attention_bf16.attention_tolerance()


def test_attention_missed_rescale_fails():
    q, k, v = qkv("peaked", 200, 64, seed=4)
    assert attention_error(flash2(q, k, v, False, rescale=False), q, k, v, False) > \
        2 * attention_bf16.attention_tolerance()


def test_attention_counts_halve_when_causal():
    size = {"b": 16, "h": 16, "s": 4096, "d": 128, "causal": 0}
    assert attention_bf16.flop(size) == 4 * 16 * 16 * 4096**2 * 128
    assert attention_bf16.flop({**size, "causal": 1}) == attention_bf16.flop(size) / 2
    assert attention_bf16.bytes_moved(size) == 4 * 2 * 16 * 16 * 4096 * 128
