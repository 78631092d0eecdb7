"""fused host module, the parts that need no GPU: manifest, geometry, FLOP and byte counts, the
float64 reference against PyTorch on the CPU, and the error model: float32 emulations of the
variants' orders pass with a margin of 3x, planted bugs (one channel's statistics lost, the window's
max taken whatever gamma's sign, a tap lost, the variance without the mean, the ragged row left out
of the statistics) fail by 3x, all measured with gpuprof's own scaled_error."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof.errors import UsageError
from gpuprof.families import _keys, conv2d, fused
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
    assert FAMILY.variant_names == ["unfused", "fused", "winograd", "eager", "compiled"]
    for v in FAMILY.variants:
        _keys.check_declared(v, fused)
    assert _keys.plan(variant("unfused"), fused.PLANS) == "chain"
    assert set(variant("unfused").helpers) == {"stats", "bn_relu", "pool"}
    assert _keys.plan(variant("fused"), fused.PLANS) == "conv_stats_then_apply"
    assert _keys.plan(variant("winograd"), fused.PLANS) == "winograd_stats_then_apply"
    assert set(variant("winograd").helpers) == {"filter", "apply"}
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


def winograd_conv_float32(data, g):
    """The conv as the winograd variant computes it, in float32: the R x S filter cut into zero-padded
    3x3 chunks (channels c' = (c, chunk row, chunk column)), U = G g G^T and V = B^T d B with the
    kernel's operations, the 16 sums over c' in order, then Y = A^T M A, ragged tiles cropped."""
    f32 = np.float32
    cr, cs = -(-g.r // 3), -(-g.s // 3)
    tp, tq = -(-g.p // 2), -(-g.q // 2)
    wp = np.zeros((g.k, g.c, 3 * cr, 3 * cs), f32)
    wp[:, :, :g.r, :g.s] = data["w"]
    gg = wp.reshape(g.k, g.c, cr, 3, cs, 3).transpose(1, 2, 4, 0, 3, 5).reshape(-1, g.k, 3, 3)  # [c'][k][a][b]
    half = f32(0.5)
    rows = [gg[..., 0, :], half * (gg[..., 0, :] + gg[..., 1, :] + gg[..., 2, :]),
            half * (gg[..., 0, :] - gg[..., 1, :] + gg[..., 2, :]), gg[..., 2, :]]          # G g, [c'][k][b]
    u = np.stack([np.stack([t[..., 0], half * (t[..., 0] + t[..., 1] + t[..., 2]),
                            half * (t[..., 0] - t[..., 1] + t[..., 2]), t[..., 2]], axis=-1) for t in rows],
                 axis=-2).reshape(-1, g.k, 16)                                                  # [c'][k][xi]
    # x padded so that every patch of every chunk lies inside: padded row = 2 tp + 3 chunk row + i
    xpad = np.zeros((g.n, g.c, 2 * tp + 3 * cr + 1, 2 * tq + 3 * cs + 1), f32)
    xpad[:, :, g.pad_h:g.pad_h + g.h, g.pad_w:g.pad_w + g.w] = data["x"]

    def patches(a, b):  # tap (i, j) of chunk (a, b) for every tile: [i][j][n][c][tp][tq]
        return np.stack([np.stack([xpad[:, :, 3 * a + i:3 * a + i + 2 * tp:2, 3 * b + j:3 * b + j + 2 * tq:2]
                                   for j in range(4)]) for i in range(4)])

    d = np.stack([np.stack([patches(a, b) for b in range(cs)]) for a in range(cr)])  # [a][b][i][j][n][c][tp][tq]
    d = d.transpose(5, 0, 1, 2, 3, 4, 6, 7).reshape(g.c * cr * cs, 4, 4, -1)  # [c'][i][j][tile]
    t = [d[:, 0] - d[:, 2], d[:, 1] + d[:, 2], d[:, 2] - d[:, 1], d[:, 1] - d[:, 3]]   # B^T d, [c'][j][tile]
    v = np.stack([np.stack([r[:, 0] - r[:, 2], r[:, 1] + r[:, 2], r[:, 2] - r[:, 1], r[:, 1] - r[:, 3]], axis=1)
                  for r in t], axis=1).reshape(-1, 16, d.shape[-1])                      # [c'][xi][tile]
    m = np.zeros((16, g.k, d.shape[-1]), f32)
    for c in range(u.shape[0]):
        m += u[c].T[:, :, None] * v[c][:, None, :]
    m = m.reshape(4, 4, g.k, -1)
    z = [[m[i, 0] + m[i, 1] + m[i, 2], m[i, 1] - m[i, 2] - m[i, 3]] for i in range(4)]   # M A, [i][b]
    y = np.stack([np.stack([z[0][b] + z[1][b] + z[2][b] for b in range(2)]),
                  np.stack([z[1][b] - z[2][b] - z[3][b] for b in range(2)])])            # [a][b][k][tile]
    y = y.reshape(2, 2, g.k, g.n, tp, tq).transpose(3, 2, 4, 0, 5, 1).reshape(g.n, g.k, 2 * tp, 2 * tq)
    return np.ascontiguousarray(y[:, :, :g.p, :g.q])


def fused_emulation(data, g, bug=None, winograd=False):
    """The fused variant's orders in float32: FP32 sums per 64-column block, added in FP64; the
    affine map in FP32; max or min of each window by gamma's sign. `bug` plants one mistake.
    `winograd`: the winograd variant's orders instead: its conv, FP32 sums per window (4 columns)."""
    z = winograd_conv_float32(data, g) if winograd else conv_float32(data, g, drop_tap=bug == "lost tap")
    partial = 4 if winograd else 64
    cols = window_order(z, g)
    if bug == "ragged row left out of the statistics":
        keep = np.zeros((g.n, g.k, g.p, g.q), dtype=bool)
        keep[:, :, :2 * g.po, :2 * g.qo] = True
        cols = np.where(window_order(keep.astype(np.float32), g) == 1.0, cols, np.nan)
    blocks = np.pad(cols, ((0, 0), (0, (-cols.shape[1]) % partial)), constant_values=np.nan).reshape(g.k, -1, partial)
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


BUGS = ["a channel's statistics lost", "max whatever gamma's sign", "lost tap", "variance without the mean"]


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
def test_winograd_emulation_is_the_conv(size):
    """The emulation itself is right (chunks, padding, transforms): FP32-close to the float64 conv."""
    g = fused.geometry(size)
    data = inputs(size, 6)
    exact = fused.conv_reference(np, data, g)
    assert np.abs(winograd_conv_float32(data, g) - exact).max() < 1e-4 * np.abs(exact).max()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_winograd_float32_orders_pass_with_margin(size):
    """F(2x2,3x3)'s transforms add round-off beyond the direct sum; the "products" model still holds."""
    g = fused.geometry(size)
    tol = fused.tolerance(variant("winograd"), size)
    for seed in range(3):
        data = inputs(size, seed)
        assert error(fused_emulation(data, g, winograd=True), data, size) * MARGIN < tol


@pytest.mark.parametrize("bug", [b for b in BUGS if b != "lost tap"])
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_planted_bugs_in_the_winograd_orders_fail_by_a_margin(size, bug):
    g = fused.geometry(size)
    data = inputs(size, 3)
    if bug == "max whatever gamma's sign":
        data["gamma"][0] = -abs(data["gamma"][0]) - 0.5
    assert error(fused_emulation(data, g, bug, winograd=True), data, size) > MARGIN * fused.tolerance(
        variant("winograd"), size)


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


# ---------------------------------------------------------------- winograd: the plan, not the kernel (GPU tests run it)


class _DeviceArray(np.ndarray):
    """numpy standing in for a CuPy array: .data.ptr is what the plan's memset takes."""

    @property
    def data(self):  # type: ignore[override]
        return SimpleNamespace(ptr=self.__array_interface__["data"][0])


def _fake_cupy(log):
    def memset(ptr, value, nbytes, stream):
        log.append(("memset", ptr, value, nbytes))

    return SimpleNamespace(empty=lambda shape, dtype: np.empty(shape, dtype).view(_DeviceArray),
                           float32=np.float32, cuda=SimpleNamespace(runtime=SimpleNamespace(memsetAsync=memset)))


def winograd_launches(monkeypatch, size, name="winograd"):
    log: list = []
    monkeypatch.setattr(fused, "cupy", lambda: _fake_cupy(log))
    monkeypatch.setattr(conv2d, "cupy", lambda: _fake_cupy(log))  # the Winograd launch is conv2d's
    v = variant(name)

    def recorder(kernel):
        return lambda grid, block, args, stream=None, shared_mem=0: log.append((kernel, grid, block, args, shared_mem))

    functions = {k: recorder(k) for k in (v.kernel, *v.extra_kernels)}
    data = inputs(size, 0)
    g = fused.geometry(size)
    out = np.full((g.n, g.k, g.po, g.qo), np.nan, dtype=np.float32)
    ctx = SimpleNamespace(grid=(1, 1, 1), block=v.block_dims(), shared_mem=v.dynamic_smem_bytes())
    fused.plan(v, functions, data, out, size, ctx)(SimpleNamespace(ptr=0))
    return v, data, out, log


@pytest.mark.parametrize("size", [*FAMILY.check_sizes, DEFAULT], ids=[*SIZE_IDS[:len(FAMILY.check_sizes)], "default"])
def test_winograd_plan_zeroes_the_sums_transforms_the_filter_then_covers_every_window(monkeypatch, size):
    v, data, out, log = winograd_launches(monkeypatch, size)
    (memset, ptr, value, nbytes), (transform, f_grid, f_block, f_args, f_smem), \
        (main, grid, block, args, smem), (apply, a_grid, a_block, a_args, _) = log
    g = fused.geometry(size)
    d = v.defines
    channels, filters, tiles = conv2d.winograd_extents(g, d["BK"], d["BM"])
    assert (memset, transform, main, apply) == ("memset", v.helper("filter"), v.kernel, v.helper("apply"))
    # one tile per 2x2 window of the ceil(P/2) x ceil(Q/2) grid: the ragged row and column are convolved
    assert tiles * 4 == g.window_columns
    u, workspace = f_args[1], args[4]
    assert f_args[0] is data["w"] and u.size == 16 * channels * filters
    assert f_grid[0] * f_block[0] >= channels * filters and f_smem == 0
    assert args[0] is data["x"] and args[1] is u and args[2] is data["gamma"] and args[3] is data["beta"]
    assert tuple(int(a) for a in args[5:]) == (g.n, g.c, g.h, g.w, g.k, g.r, g.s)
    assert grid == (-(-g.k // d["BM"]) * -(-tiles // d["BN"]),) and block == v.block_dims()
    assert smem == v.dynamic_smem_bytes() == 2 * 16 * d["BK"] * (d["BM"] + d["BN"]) * 4
    # the workspace: 2K FP64 sums (zeroed first), then a (max, min) float2 per complete window
    pooled = g.n * g.k * g.po * g.qo
    assert workspace.size == 4 * g.k + 2 * pooled
    assert (ptr, value, nbytes) == (workspace.data.ptr, 0, 16 * g.k)
    minmax, sums = a_args[0], a_args[1]
    assert sums.data.ptr == workspace.data.ptr and minmax.data.ptr == workspace.data.ptr + 16 * g.k
    assert a_args[4] is out and int(a_args[8]) == g.n * g.p * g.q  # every conv output counts in the statistics
    assert a_grid[0] * a_block[0] >= pooled and a_block[0] == d["EW_THREADS"]


def test_winograd_counts_direct_flops_and_keeps_the_products_tolerance():
    v = variant("winograd")
    assert v.flop_count == "nominal"  # the family's formula: 2.25x more FLOPs than it does at 3x3
    assert fused.tolerance(v, DEFAULT) == fused.tolerance(variant("fused"), DEFAULT)


def test_winograd_refuses_a_transformed_filter_over_the_index_limit(monkeypatch):
    monkeypatch.setattr(fused, "cupy", lambda: _fake_cupy([]))
    monkeypatch.setattr(conv2d, "cupy", lambda: _fake_cupy([]))
    v = variant("winograd")
    ctx = SimpleNamespace(grid=(1, 1, 1), block=v.block_dims(), shared_mem=v.dynamic_smem_bytes())
    # U would hold 16 * 2^28 floats: refused before any buffer of that size is made (no inputs are passed)
    size = {"n": 1, "c": 2**14, "h": 2, "w": 2, "k": 2**14, "r": 1, "s": 1}
    with pytest.raises(UsageError, match="fused/winograd: the transformed filter"):
        fused.plan(v, dict.fromkeys((v.kernel, *v.extra_kernels)), dict.fromkeys(("x", "w", "gamma", "beta")),
                   None, size, ctx)
