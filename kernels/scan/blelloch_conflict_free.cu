// scan / blelloch_conflict_free
// Changed from blelloch: every shared-memory index i is padded to i + (i >> 5) (one spare word per
// 32), so the power-of-two strides of the tree land on different banks (GPU Gems 3, ch. 39).
// Same additions and barriers, far fewer bank-conflict replays. Expected limiter: barriers and
// the propagate pass's extra read and write of y.
#ifndef BLOCK
#define BLOCK 512
#endif
#define TILE (2 * BLOCK)
#define PAD(i) ((i) + ((i) >> 5))
static_assert(BLOCK >= 32 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0, "the tree needs a power-of-two BLOCK in 32..1024");

extern "C" __global__ void __launch_bounds__(BLOCK) scan_blelloch_conflict_free(const float* __restrict__ x, float* __restrict__ y,
                                                                                int n) {
    __shared__ float tree[PAD(TILE - 1) + 1];
    const int t = threadIdx.x;
    const long long base = (long long)blockIdx.x * TILE;
    const float a = base + t < n ? x[base + t] : 0.f;
    const float b = base + t + BLOCK < n ? x[base + t + BLOCK] : 0.f;
    tree[PAD(t)] = a;
    tree[PAD(t + BLOCK)] = b;
    int stride = 1;
    for (int d = BLOCK; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) tree[PAD(stride * (2 * t + 2) - 1)] += tree[PAD(stride * (2 * t + 1) - 1)];
        stride <<= 1;
    }
    if (t == 0) tree[PAD(TILE - 1)] = 0.f;
    for (int d = 1; d < TILE; d <<= 1) {
        stride >>= 1;
        __syncthreads();
        if (t < d) {
            const int left = PAD(stride * (2 * t + 1) - 1), right = PAD(stride * (2 * t + 2) - 1);
            const float l = tree[left];
            tree[left] = tree[right];
            tree[right] += l;
        }
    }
    __syncthreads();
    if (base + t < n) y[base + t] = tree[PAD(t)] + a;
    if (base + t + BLOCK < n) y[base + t + BLOCK] = tree[PAD(t + BLOCK)] + b;
}

// ---- Multi-block: scan-then-propagate. The helpers' code is shared by every variant that scans
// tile by tile (scan_propagate.cuh); these are this variant's entry points, for its TILE.
#include "scan_propagate.cuh"

extern "C" __global__ void scan_blelloch_conflict_free_totals(const float* __restrict__ y, float* __restrict__ totals, int count) {
    scan_propagate_totals<TILE>(y, totals, count);
}

extern "C" __global__ void scan_blelloch_conflict_free_add(float* __restrict__ y, const float* __restrict__ offsets, int n) {
    scan_propagate_add<TILE>(y, offsets, n);
}
