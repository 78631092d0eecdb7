"""Input classes for row statistics (issue 39): softmax and a layer norm whose statistics come from part
of the row — the adversarial kernels in tests/kernels/adversarial/ emulated in NumPy, FP32 where they
compute — pass the random-input check where the kernels would, and fail on a class the family
declares, by far more than its tolerance; the honest computation stays inside it on every class."""

from __future__ import annotations

import numpy as np
import pytest

from gpuprof.families import fused, input_classes, softmax
from gpuprof.measure.check import scaled_error
from gpuprof.variants import catalog

ROWS, COLS = 64, 50304  # softmax's largest check size besides the 1M-column one
SEEDS = range(3)


def rows_of(kind: str | None, seed: int, low: float = 70.0, high: float = 90.0, shape=(ROWS, COLS)) -> np.ndarray:
    x = {"x": np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)}
    if kind:
        input_classes.apply(kind, x, seed)
    return x["x"]


def softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_with(x: np.ndarray, m: np.ndarray, total: np.ndarray | None = None) -> np.ndarray:
    """FP32 softmax around the given row max (and row sum, when the kernel found its own)."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x - m[:, None]).astype(np.float32)
        s = e.sum(axis=1, dtype=np.float32) if total is None else total
        return (e / s[:, None]).astype(np.float32)


def sampled_max(x: np.ndarray, sample: int = 8) -> np.ndarray:
    """softmax_sampled_max.cu: the max of one 32-float line in `sample`."""
    lines = (np.arange(x.shape[1]) // 32) % sample == 0
    return softmax_with(x, x[:, lines].max(axis=1))


def early_exit(x: np.ndarray, block: int = 256) -> np.ndarray:
    """softmax_early_exit.cu: the sum stops at the first tile that added under an ulp of it."""
    m = x.max(axis=1)
    e = np.exp(x - m[:, None]).astype(np.float32)
    totals = np.zeros(x.shape[0], np.float32)
    for r in range(x.shape[0]):
        for base in range(0, x.shape[1], block):
            tile = e[r, base:base + block].sum(dtype=np.float32)
            totals[r] += tile
            if totals[r] > 0 and tile <= totals[r] * np.float32(2.0**-24):
                break
    return softmax_with(x, m, totals)


def softmax_error(out: np.ndarray, x: np.ndarray, kind: str | None) -> float:
    scale = input_classes.error_scale(kind, softmax.ERROR_SCALE) if kind else softmax.ERROR_SCALE
    err, not_written = scaled_error(out, softmax_ref(x), scale)
    return float("inf") if not_written or not np.isfinite(err) else err


def softmax_tolerance() -> float:
    return softmax.tolerance(catalog.load_family("softmax").variant("block_row"), {"rows": ROWS, "cols": COLS})


@pytest.mark.parametrize("seed", SEEDS)
def test_softmax_estimators_pass_random_rows_and_fail_on_spikes(seed):
    tolerance = softmax_tolerance()
    x = rows_of(None, seed)
    assert softmax_error(sampled_max(x), x, None) < tolerance  # softmax ignores the constant subtracted
    x = rows_of(None, seed, shape=(8, COLS))
    assert softmax_error(early_exit(x), x, None) < tolerance  # no tile of random rows is under an ulp
    spikes = rows_of("spikes", seed)
    assert softmax_error(sampled_max(spikes), spikes, "spikes") > 1e3 * tolerance  # exp(~100) overflows
    spikes = rows_of("spikes", seed, shape=(16, COLS))
    assert softmax_error(early_exit(spikes), spikes, "spikes") > 1e3 * tolerance


@pytest.mark.parametrize("kind", softmax.INPUT_CLASSES)
def test_honest_softmax_stays_inside_the_tolerance_on_every_class(kind):
    for seed in SEEDS:
        x = rows_of(kind, seed)
        assert softmax_error(softmax_with(x, x.max(axis=1)), x, kind) < softmax_tolerance() / 10, kind


def test_spike_rows_would_fail_an_honest_softmax_judged_element_by_element():
    """Why spikes are judged per row: exp(-100) underflows FP32, so the zeros' outputs are 0 against a
    reference of ~1e-45; against the row's rms they are nothing."""
    x = rows_of("spikes", 0)
    honest = softmax_with(x, x.max(axis=1))
    assert scaled_error(honest, softmax_ref(x), "element")[0] > 0.5
    assert input_classes.error_scale("spikes", "element") == "row"
    assert input_classes.error_scale("spikes", "rms") == "rms"
    assert input_classes.error_scale("needles", "element") == "element"


# ---------------------------------------------------------------- a layer norm (the adversarial family folder)

LN_ROWS, LN_COLS = 32, 4097
LN_TOLERANCE = 2e-5  # tests/kernels/adversarial/layernorm/family.toml


def layernorm(x: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    return ((x - mean[:, None]) / np.sqrt(var[:, None] + np.float32(1e-5))).astype(np.float32)


def ln_ref(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    return (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)


def ln_error(out: np.ndarray, x: np.ndarray) -> float:
    err, _ = scaled_error(out, ln_ref(x))
    return err if np.isfinite(err) else float("inf")


def honest_ln(x: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=1, dtype=np.float32)
    return layernorm(x, mean, ((x - mean[:, None]) ** 2).mean(axis=1, dtype=np.float32))


def sampled_ln(x: np.ndarray) -> np.ndarray:
    """layernorm.cu with SAMPLE_STRIDE = 2: statistics from every other element."""
    part = x[:, ::2]
    mean = part.mean(axis=1, dtype=np.float32)
    return layernorm(x, mean, ((part - mean[:, None]) ** 2).mean(axis=1, dtype=np.float32))


def early_exit_ln(x: np.ndarray, block: int = 256) -> np.ndarray:
    """layernorm.cu with EARLY_EXIT = 1: stop at the first tile that moved neither sum by an ulp."""
    means, variances = np.zeros(x.shape[0], np.float32), np.zeros(x.shape[0], np.float32)
    eps = np.float32(2.0**-24)
    for r in range(x.shape[0]):
        total = squares = np.float32(0)
        seen = 0
        for base in range(0, x.shape[1], block):
            v = x[r, base:base + block]
            tile, tile_squares = v.sum(dtype=np.float32), (v * v).sum(dtype=np.float32)
            seen = min(x.shape[1], base + block)
            converged = base > 0 and abs(tile) <= abs(total) * eps and tile_squares <= squares * eps
            total, squares = total + tile, squares + tile_squares
            if converged:
                break
        means[r] = total / seen
        variances[r] = max(squares / seen - means[r] ** 2, 0)
    return layernorm(x, means, variances)


@pytest.mark.parametrize("seed", SEEDS)
def test_layernorm_estimators_fail_on_the_classes_the_folder_declares(seed):
    shape = (LN_ROWS, LN_COLS)
    random = rows_of(None, seed, -1.0, 1.0, shape)
    assert ln_error(honest_ln(random), random) < LN_TOLERANCE / 10
    assert ln_error(early_exit_ln(random), random) < LN_TOLERANCE  # random tiles never "converge"
    alternating = rows_of("alternating", seed, -1.0, 1.0, shape)
    assert ln_error(sampled_ln(alternating), alternating) > 1e3 * LN_TOLERANCE  # one sign seen: variance 0
    spikes = rows_of("spikes", seed, -1.0, 1.0, shape)
    assert ln_error(early_exit_ln(spikes), spikes) > 1e3 * LN_TOLERANCE  # tiles of zeros "converge"
    for kind in ("spikes", "alternating"):
        x = rows_of(kind, seed, -1.0, 1.0, shape)
        assert ln_error(honest_ln(x), x) < LN_TOLERANCE / 10, kind


# ---------------------------------------------------------------- the classes themselves


def test_spikes_are_two_whole_numbers_per_row_among_zeros():
    x = rows_of("spikes", 5)
    per_row = np.count_nonzero(x, axis=1)
    assert per_row.min() >= 1 and per_row.max() <= input_classes.SPIKES_PER_ROW
    nonzero = x[x != 0]
    assert np.all(nonzero == np.round(nonzero))
    assert nonzero.min() >= input_classes.SPIKE_LOW and nonzero.max() < input_classes.SPIKE_HIGH


def test_alternating_constant_and_heavy_rows():
    alternating = rows_of("alternating", 1, shape=(4, 10))
    assert np.all(alternating[:, ::2] == -alternating[:, 1::2]) and np.all(alternating[:, 0] >= 1)
    assert np.all(alternating.sum(axis=1) == 0)  # an even row cancels exactly
    constants = rows_of("constants", 1, shape=(4, 10))
    assert np.all(constants == constants[:, :1]) and np.all(constants == np.round(constants))
    heavy = rows_of("heavy_tail", 1, shape=(1, 1 << 20))
    assert heavy.min() >= 1 and heavy.max() <= input_classes.HEAVY_MAX
    assert heavy.max() > 100 * np.median(heavy)  # a few values carry much of the sum


def test_classes_fill_the_data_and_leave_weights_alone():
    rng = np.random.default_rng(0)
    inputs = {"x": rng.uniform(0, 1, (8, 64)).astype(np.float32), "gamma": np.ones(64, np.float32),
              "labels": np.arange(8, dtype=np.int32)}
    input_classes.apply("constants", inputs, 3)
    assert np.all(inputs["x"] == inputs["x"][:, :1])
    assert np.all(inputs["gamma"] == 1) and np.array_equal(inputs["labels"], np.arange(8))
    assert input_classes.data_inputs(inputs) == ["x"]


def test_the_exact_model_is_for_whole_number_sums_only():
    assert input_classes.tolerance("needles", 1e-3, "fp32") == input_classes.EXACT_TOLERANCE
    assert input_classes.tolerance("alternating", 1e-3, "fp32") == input_classes.EXACT_TOLERANCE
    assert input_classes.tolerance("needles", 1e-3, "fp32", exact_sums=False) == 1e-3  # softmax, a norm
    assert input_classes.tolerance("heavy_tail", 1e-3, "fp32") == 1e-3  # not whole numbers
    assert input_classes.tolerance("spikes", 1e-3, "fp32") == 1e-3


@pytest.mark.parametrize("kind", fused.INPUT_CLASSES)
def test_fused_classes_stay_inside_its_error_models_gains(kind):
    """fused's tolerance assumes max|v|/std <= DEVIATION_MAX, channel means within ~5 std and an output
    rms >= OUTPUT_RMS_MIN: it holds on each class it declares, at every check size."""
    family = catalog.load_family("fused")
    for size in family.check_sizes:
        g = fused.geometry(size)
        for seed in range(2):
            data = fused._make_inputs(np, size, seed)
            input_classes.apply(kind, data, seed)
            z = fused.conv_reference(np, data, g)
            std = z.std(axis=(0, 2, 3))
            assert np.all(np.abs(z).max(axis=(0, 2, 3)) < fused.DEVIATION_MAX * std), (kind, size)
            assert np.all(np.abs(z.mean(axis=(0, 2, 3))) < 6 * std), (kind, size)
            y = fused.block_reference(np, data, size)
            assert np.sqrt(np.mean(y * y)) > fused.OUTPUT_RMS_MIN, (kind, size)
