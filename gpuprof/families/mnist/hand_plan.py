"""The hand-written step: kernels/mnist/hand.cu's kernels and cuBLAS GEMMs (through CuPy), launched
in order on one stream."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuprof.families import _keys
from gpuprof.families.mnist.layout import BN_EPS, CLASSES, HIDDEN, IMAGE, LR, PARAMETERS, batch_of, layout
from gpuprof.gpu import cupy

PLANS = ("train_step",)


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """launch(stream) for the hand step: kernels of kernels/mnist/hand.cu in order, cuBLAS (CuPy)
    for the GEMMs, every workspace allocated here. Activations are channel-major (C, N, H, W)."""
    _keys.plan(variant, PLANS)
    cp = cupy()
    lay = layout()
    n = batch_of(size)
    threads = int(variant.defines["THREADS"])
    stats_threads = int(variant.defines["STATS_THREADS"])
    k = {name.removeprefix("mnist_"): fn for name, fn in functions.items()}
    bn_stats = functions[variant.kernel]  # the manifest's entry point
    i32, f32 = np.int32, np.float32
    m1, m2 = n * IMAGE * IMAGE, n * 14 * 14  # conv outputs per channel, blocks 1 and 2

    def param(base: int, i: int) -> Any:
        seg = lay.segment(i)
        return out[base + seg.start:base + seg.stop].reshape(PARAMETERS[i][1]) if base >= 0 else \
            inputs["params"][seg].reshape(PARAMETERS[i][1])

    w = [param(-1, i) for i in range(len(PARAMETERS))]  # initial weights (read only)
    g = [param(lay.grads, i) for i in range(len(PARAMETERS))]  # gradients, in the output
    host = inputs["host"]
    x = cp.empty((n, IMAGE * IMAGE), dtype=cp.float32)  # = (C=1, N, 28, 28)
    labels = cp.empty((n,), dtype=cp.int64)
    col1 = cp.empty((9, m1), dtype=cp.float32)
    y1 = cp.empty((32, m1), dtype=cp.float32)
    stats1 = cp.empty((2, 32), dtype=cp.float32)
    p1 = cp.empty((32, m2), dtype=cp.float32)  # pooled block 1, (32, N, 14, 14)
    arg1 = cp.empty((32 * m2,), dtype=cp.uint8)
    col2 = cp.empty((32 * 9, m2), dtype=cp.float32)
    y2 = cp.empty((64, m2), dtype=cp.float32)
    stats2 = cp.empty((2, 64), dtype=cp.float32)
    flat = cp.empty((n, 64 * 7 * 7), dtype=cp.float32)  # pooled block 2, (N, 64, 7, 7): the flatten
    arg2 = cp.empty((64 * n * 49,), dtype=cp.uint8)
    z1 = cp.empty((n, HIDDEN), dtype=cp.float32)
    a1 = cp.empty((n, HIDDEN), dtype=cp.float32)
    z2 = cp.empty((n, CLASSES), dtype=cp.float32)
    dz2 = cp.empty((n, CLASSES), dtype=cp.float32)
    da1 = cp.empty((n, HIDDEN), dtype=cp.float32)
    dz1 = cp.empty((n, HIDDEN), dtype=cp.float32)
    dflat = cp.empty((n, 64 * 7 * 7), dtype=cp.float32)
    dy2 = cp.empty((64, m2), dtype=cp.float32)
    dcol2 = cp.empty((32 * 9, m2), dtype=cp.float32)
    dp1 = cp.empty((32, m2), dtype=cp.float32)
    dy1 = cp.empty((32, m1), dtype=cp.float32)
    grads_flat = out[lay.grads:lay.grads + lay.padded]
    weights_flat = out[lay.weights:lay.weights + lay.padded]
    loss = out[0:1]
    runtime = cp.cuda.runtime
    host_to_device = runtime.memcpyHostToDevice

    def grid(count: int, per_block: int = threads) -> tuple[int]:
        return (-(-count // per_block),)

    def block_forward(stream, src, col, y, stats, pooled, argmax, c_in, c_out, hw, conv_w, gamma, beta, nchw):
        m = n * hw * hw
        k["im2col3x3"](grid(c_in * m), (threads,), (src, col, i32(c_in), i32(n), i32(hw), i32(hw)), stream=stream)
        cp.dot(conv_w.reshape(c_out, c_in * 9), col, out=y)
        bn_stats((c_out,), (stats_threads,), (y, stats[0], stats[1], i32(m), f32(BN_EPS)), stream=stream)
        k["bn_relu_pool"](grid(c_out * m // 4), (threads,), (y, stats[0], stats[1], gamma, beta, pooled, argmax,
                          i32(c_out), i32(n), i32(hw), i32(hw), i32(nchw)), stream=stream)

    def block_backward(stream, y, stats, argmax, dpool, dy, c_out, hw, gamma, beta, dgamma, dbeta, nchw):
        m = n * hw * hw
        common = (y, stats[0], stats[1], gamma, beta, argmax, dpool)
        k["bn_backward_reduce"]((c_out,), (stats_threads,), (*common, dgamma, dbeta, i32(c_out), i32(n), i32(hw),
                                i32(hw), i32(nchw)), stream=stream)
        k["bn_backward_dx"](grid(c_out * m // 4), (threads,), (*common, dgamma, dbeta, dy, i32(c_out), i32(n),
                            i32(hw), i32(hw), i32(nchw)), stream=stream)

    def launch(stream: Any) -> None:
        with stream:
            runtime.memsetAsync(grads_flat.data.ptr, 0, grads_flat.nbytes, stream.ptr)  # zero-grad
            runtime.memcpyAsync(x.data.ptr, host.images.ctypes.data, x.nbytes, host_to_device, stream.ptr)
            runtime.memcpyAsync(labels.data.ptr, host.labels.ctypes.data, labels.nbytes, host_to_device, stream.ptr)
            # forward
            block_forward(stream, x, col1, y1, stats1, p1, arg1, 1, 32, IMAGE, w[0], w[1], w[2], 0)
            block_forward(stream, p1, col2, y2, stats2, flat, arg2, 32, 64, 14, w[3], w[4], w[5], 1)
            cp.dot(flat, w[6].T, out=z1)
            k["bias_relu"](grid(n * HIDDEN), (threads,), (z1, w[7], a1, i32(n), i32(HIDDEN)), stream=stream)
            cp.dot(a1, w[8].T, out=z2)
            k["softmax_xent"]((1,), (threads,), (z2, w[9], labels, dz2, loss, g[9], i32(n)), stream=stream)
            # backward
            cp.dot(dz2.T, a1, out=g[8])
            cp.dot(dz2, w[8], out=da1)
            k["relu_bias_backward"](grid(HIDDEN, 32), (32, 32), (da1, a1, dz1, g[7], i32(n), i32(HIDDEN)),
                                    stream=stream)
            cp.dot(dz1.T, flat, out=g[6])
            cp.dot(dz1, w[6], out=dflat)
            block_backward(stream, y2, stats2, arg2, dflat, dy2, 64, 14, w[4], w[5], g[4], g[5], 1)
            cp.dot(dy2, col2.T, out=g[3].reshape(64, 32 * 9))
            cp.dot(w[3].reshape(64, 32 * 9).T, dy2, out=dcol2)
            k["col2im3x3"](grid(32 * m2), (threads,), (dcol2, dp1, i32(32), i32(n), i32(14), i32(14)), stream=stream)
            block_backward(stream, y1, stats1, arg1, dp1, dy1, 32, IMAGE, w[1], w[2], g[1], g[2], 0)
            cp.dot(dy1, col1.T, out=g[0].reshape(32, 9))
            # update, out of place: w' = w0 - lr * g over the whole flat buffer
            k["sgd"](grid(lay.padded), (threads,), (inputs["params"], grads_flat, weights_flat, f32(LR),
                     i32(lay.padded)), stream=stream)

    return launch
