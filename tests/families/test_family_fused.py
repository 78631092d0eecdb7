"""fused host module, the parts that need no GPU: manifest, geometry, FLOP and byte counts, the
float64 reference against PyTorch on the CPU, and the error model: float32 emulations of the
variants' orders pass with a margin of 3x, planted bugs (one channel's statistics lost, the window's
max taken whatever gamma's sign, a tap lost, the variance without the mean, the ragged row left out
of the statistics) fail by 3x, all measured with gpuprof's own scaled_error."""

from __future__ import annotations

import numpy as np
import pytest

from gpuprof.errors import UsageError
from gpuprof.families import _keys, fused
from gpuprof.families._rounding import FP32
from gpuprof.measure.check import scaled_error
from gpuprof.variants import catalog

FAMILY = catalog.load_family("fused")
DEFAULT = dict(FAMILY.default_size)
MNIST_1 = {"n": 64, "c": 1, "h": 28, "w": 28, "k": 32, "r": 3, "s": 3}
MNIST_2 = {"n": 64, "c": 32, "h": 14, "w": 14, "k": 64, "r": 3, "s": 3}
MARGIN = 3.0
# CPU-sized stand-ins with the default's depth C*R*S = 576 (the error grows with it, not with N*H*W)
DEEP = {"n": 2, "c": 64, "h": 12, "w": 13, "k": 8, "r": 3, "s": 3}
SIZES = [*FAMILY.check_sizes, DEEP, {**MNIST_1, "n": 8}]
SIZE_IDS = ["x".join(str(v) for v in s.values()) for s in SIZES]


def variant(name):
    return FAMILY.variant(name)


def inputs(size, seed=0):
    return fused._make_inputs(np, size, seed)


# ---------------------------------------------------------------- manifest and counts


def test_manifest_declares_plans_and_error_models_the_module_offers():
    assert FAMILY.variant_names == ["unfused", "fused", "eager", "compiled"]
    for v in FAMILY.variants:
        _keys.check_declared(v, fused)
    assert _keys.plan(variant("unfused"), fused.PLANS) == "chain"
    assert set(variant("unfused").helpers) == {"stats", "bn_relu", "pool"}
    assert _keys.plan(variant("fused"), fused.PLANS) == "conv_stats_then_apply"
    assert variant("eager").call == "torch.eager" and variant("compiled").call == "torch.compile"


def test_default_counts():
    assert fused.flop(DEFAULT) == 2 * 32 * 64 * 56 * 56 * 64 * 9 == 7_398_752_256
    # x + w + gamma + beta read once, the pooled y written once
    assert (fused.bytes_moved(DEFAULT)
            == 4 * (32 * 64 * 56 * 56 + 64 * 64 * 9 + 2 * 64 + 32 * 64 * 28 * 28) == 32_260_608)


def test_mnist_block_counts():
    assert fused.flop(MNIST_1) == 2 * 64 * 32 * 28 * 28 * 9
    assert fused.bytes_moved(MNIST_2) == 4 * (64 * 32 * 14 * 14 + 64 * 32 * 9 + 128 + 64 * 64 * 7 * 7)


def test_ragged_geometry():
    g = fused.geometry({"n": 1, "c": 3, "h": 7, "w": 9, "k": 5, "r": 3, "s": 3})
    assert (g.p, g.q, g.po, g.qo, g.count) == (7, 9, 3, 4, 63)
    assert g.window_columns == 4 * 4 * 5  # a 4 x 5 window grid: the ragged row and column included


@pytest.mark.parametrize(("change", "match"), [({"r": 2}, "odd"), ({"h": 1}, "2x2"), ({"n": 2**20}, "32-bit")])
def test_bad_sizes_are_refused(change, match):
    with pytest.raises(UsageError, match=match):
        fused.geometry({**DEFAULT, **change})


def test_every_size_fits_the_grid_limits():
    for size in (DEFAULT, MNIST_1, MNIST_2, *FAMILY.check_sizes):
        g = fused.geometry(size)
        assert -(-g.k // 64) <= 65535 and g.k <= 65535


# ---------------------------------------------------------------- the reference


@pytest.mark.parametrize("size", FAMILY.check_sizes, ids=SIZE_IDS[:len(FAMILY.check_sizes)])
def test_reference_matches_pytorch_in_float64(size):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    data = inputs(size, seed=1)
    g = fused.geometry(size)
    t = {k: torch.from_numpy(v.astype(np.float64)) for k, v in data.items()}
    z = functional.conv2d(t["x"], t["w"], padding=(g.pad_h, g.pad_w))
    z = functional.batch_norm(z, None, None, t["gamma"], t["beta"], training=True, eps=fused.EPS)
    expected = functional.max_pool2d(functional.relu(z), 2, 2).numpy()
    got = fused.block_reference(np, data, size)
    assert got.shape == (g.n, g.k, g.po, g.qo)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- the error model


def conv_float32(data, g, drop_tap=False):
    """The conv in float32: per tap (r, s) a float32 (K x C) @ (C x pixels) product, summed in float32."""
    x = np.pad(data["x"], ((0, 0), (0, 0), (g.pad_h, g.pad_h), (g.pad_w, g.pad_w)))
    acc = np.zeros((g.k, g.n, g.p, g.q), dtype=np.float32)
    for r in range(g.r):
        for s in range(g.s):
            w = data["w"][:, :, r, s].copy()
            if drop_tap and r == 0 and s == 0:
                w[:, 0] = 0.0  # channel 0's top-left tap lost (a tile-edge bug)
            acc += np.tensordot(w, x[:, :, r:r + g.p, s:s + g.q], axes=([1], [1])).astype(np.float32)
    return np.ascontiguousarray(acc.transpose(1, 0, 2, 3))


def window_order(z, g):
    """z[n][k][p][q] -> per channel, the GEMM columns of the fused kernel (window-major, ragged included)."""
    pw, qw = (g.p + 1) // 2, (g.q + 1) // 2
    padded = np.full((g.n, g.k, 2 * pw, 2 * qw), np.nan, dtype=z.dtype)
    padded[:, :, :g.p, :g.q] = z
    cols = padded.reshape(g.n, g.k, pw, 2, qw, 2).transpose(1, 0, 2, 4, 3, 5)  # k, n, pw, qw, dp, dq
    return cols.reshape(g.k, -1)


def fused_emulation(data, g, bug=None):
    """The fused variant's orders in float32: FP32 sums per 64-column block, added in FP64; the
    affine map in FP32; max or min of each window by gamma's sign. `bug` plants one mistake."""
    z = conv_float32(data, g, drop_tap=bug == "lost tap")
    cols = window_order(z, g)
    if bug == "ragged row left out of the statistics":
        keep = np.zeros((g.n, g.k, g.p, g.q), dtype=bool)
        keep[:, :, :2 * g.po, :2 * g.qo] = True
        cols = np.where(window_order(keep.astype(np.float32), g) == 1.0, cols, np.nan)
    blocks = np.pad(cols, ((0, 0), (0, (-cols.shape[1]) % 64)), constant_values=np.nan).reshape(g.k, -1, 64)
    sums = np.nansum(blocks, axis=2, dtype=np.float32).astype(np.float64).sum(axis=1)
    squares = np.nansum(blocks * blocks, axis=2, dtype=np.float32).astype(np.float64).sum(axis=1)
    count = np.count_nonzero(~np.isnan(cols[0]))
    if bug == "a channel's statistics lost":
        sums[g.k // 2] = squares[g.k // 2] = 0.0
    mean = sums / count
    var = np.maximum(squares / count - (0.0 if bug == "variance without the mean" else mean * mean), 0.0)
    a = (data["gamma"] * (1.0 / np.sqrt(var + fused.EPS)).astype(np.float32)).astype(np.float32)
    b = (data["beta"] - mean.astype(np.float32) * a).astype(np.float32)
    windows = z[:, :, :2 * g.po, :2 * g.qo].reshape(g.n, g.k, g.po, 2, g.qo, 2)
    mx, mn = windows.max(axis=(3, 5)), windows.min(axis=(3, 5))
    a4, b4 = a.reshape(1, -1, 1, 1), b.reshape(1, -1, 1, 1)
    chosen = mx if bug == "max whatever gamma's sign" else np.where(a4 >= 0, mx, mn)
    return np.maximum(a4 * chosen + b4, np.float32(0.0)).astype(np.float32)


def error(out, data, size):
    return scaled_error(out, fused.block_reference(np, data, size))[0]


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_fused_float32_orders_pass_with_margin(size):
    g = fused.geometry(size)
    tol = fused.tolerance(variant("fused"), size)
    for seed in range(3):
        data = inputs(size, seed)
        assert error(fused_emulation(data, g), data, size) * MARGIN < tol


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_unfused_float32_orders_pass_with_margin(size):
    """conv in FP32, statistics in FP64 from the FP32 z, bn + relu in FP32, then the pool."""
    g = fused.geometry(size)
    tol = fused.tolerance(variant("unfused"), size)
    data = inputs(size, 5)
    z = conv_float32(data, g).astype(np.float64)
    mean = z.mean(axis=(0, 2, 3))
    var = np.maximum((z * z).mean(axis=(0, 2, 3)) - mean * mean, 0.0)
    a = (data["gamma"] * (1.0 / np.sqrt(var + fused.EPS)).astype(np.float32)).astype(np.float32)
    b = (data["beta"] - mean.astype(np.float32) * a).astype(np.float32)
    act = np.maximum(a.reshape(1, -1, 1, 1) * z.astype(np.float32) + b.reshape(1, -1, 1, 1), np.float32(0.0))
    out = act[:, :, :2 * g.po, :2 * g.qo].reshape(g.n, g.k, g.po, 2, g.qo, 2).max(axis=(3, 5))
    assert error(out.astype(np.float32), data, size) * MARGIN < tol


@pytest.mark.parametrize("size", SIZES[:4] + [DEEP], ids=SIZE_IDS[:4] + ["deep"])
def test_pytorch_float32_cpu_passes_the_vendor_tolerance(size):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    g = fused.geometry(size)
    data = inputs(size, 2)
    t = {k: torch.from_numpy(v) for k, v in data.items()}
    z = functional.conv2d(t["x"], t["w"], padding=(g.pad_h, g.pad_w))
    z = functional.batch_norm(z, None, None, t["gamma"], t["beta"], training=True, eps=fused.EPS)
    out = functional.max_pool2d(functional.relu(z), 2, 2).numpy()
    assert error(out, data, size) * MARGIN < fused.tolerance(variant("eager"), size)


BUGS = ["a channel's statistics lost", "max whatever gamma's sign", "lost tap", "variance without the mean"]


@pytest.mark.parametrize("bug", BUGS)
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_planted_bugs_fail_by_a_margin(size, bug):
    g = fused.geometry(size)
    tol = fused.tolerance(variant("fused"), size)
    data = inputs(size, 3)
    if bug == "max whatever gamma's sign":
        data["gamma"][0] = -abs(data["gamma"][0]) - 0.5  # at least one channel with a negative gamma
    assert error(fused_emulation(data, g, bug), data, size) > MARGIN * tol


@pytest.mark.parametrize("size", [s for s in SIZES if s["h"] % 2 or s["w"] % 2], ids=str)
def test_statistics_without_the_ragged_row_fail(size):
    g = fused.geometry(size)
    data = inputs(size, 4)
    bug = "ragged row left out of the statistics"
    assert error(fused_emulation(data, g, bug), data, size) > MARGIN * fused.tolerance(variant("fused"), size)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_the_models_gains_hold_on_the_inputs(size):
    """DEVIATION_MAX bounds max|v|/std per channel and OUTPUT_RMS_MIN the output's rms (the check's
    scale floor), on the family's inputs, over seeds."""
    g = fused.geometry(size)
    for seed in range(8):
        data = inputs(size, seed)
        z = fused.conv_reference(np, data, g)
        std = z.std(axis=(0, 2, 3))
        assert np.all(np.abs(z).max(axis=(0, 2, 3)) < fused.DEVIATION_MAX * std)
        y = fused.block_reference(np, data, size)
        assert np.sqrt(np.mean(y * y)) > fused.OUTPUT_RMS_MIN
        assert np.all(np.abs(data["gamma"]) <= fused.GAMMA_MAX)


def test_tolerance_values():
    assert 1e-3 < fused.tolerance(variant("fused"), DEFAULT) < 3e-3
    assert fused.tolerance(variant("unfused"), DEFAULT) == fused.tolerance(variant("fused"), DEFAULT)
    direct = 8 * FP32 * 24 + 14 * FP32  # conv2d's products model at C*R*S = 576
    assert fused.tolerance(variant("eager"), DEFAULT) == pytest.approx(128 * (10 * direct + 104 * FP32))
