// scan / blelloch
// Changed from hillis_steele: Blelloch's work-efficient scan. Each thread owns two elements of a
// 2*BLOCK tile; an up-sweep builds partial sums in a tree, a down-sweep turns it into an
// exclusive scan (adding the own element makes it inclusive): O(n) additions instead of
// O(n log n), and half the threads per element. The strided tree indices make 2..32-way shared-
// memory bank conflicts. Expected limiter: shared-memory bank conflicts and barriers.
#ifndef BLOCK
#define BLOCK 512
#endif
#define TILE (2 * BLOCK)
static_assert(BLOCK >= 32 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0, "the tree needs a power-of-two BLOCK in 32..1024");

extern "C" __global__ void __launch_bounds__(BLOCK) scan_blelloch(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float tree[TILE];
    const int t = threadIdx.x;
    const long long base = (long long)blockIdx.x * TILE;
    const float a = base + t < n ? x[base + t] : 0.f;  // elements t and t + BLOCK: coalesced loads
    const float b = base + t + BLOCK < n ? x[base + t + BLOCK] : 0.f;
    tree[t] = a;
    tree[t + BLOCK] = b;
    int stride = 1;
    for (int d = BLOCK; d > 0; d >>= 1) {  // up-sweep: tree[k*2s + 2s-1] += tree[k*2s + s-1]
        __syncthreads();
        if (t < d) tree[stride * (2 * t + 2) - 1] += tree[stride * (2 * t + 1) - 1];
        stride <<= 1;
    }
    if (t == 0) tree[TILE - 1] = 0.f;  // the root becomes the identity: the down-sweep is exclusive
    for (int d = 1; d < TILE; d <<= 1) {  // down-sweep: swap left into right, add the old left
        stride >>= 1;
        __syncthreads();
        if (t < d) {
            const int left = stride * (2 * t + 1) - 1, right = stride * (2 * t + 2) - 1;
            const float l = tree[left];
            tree[left] = tree[right];
            tree[right] += l;
        }
    }
    __syncthreads();
    if (base + t < n) y[base + t] = tree[t] + a;  // exclusive + own element = inclusive
    if (base + t + BLOCK < n) y[base + t + BLOCK] = tree[t + BLOCK] + b;
}

// ---- Multi-block: scan-then-propagate. The helpers' code is shared by every variant that scans
// tile by tile (scan_propagate.cuh); these are this variant's entry points, for its TILE.
#include "scan_propagate.cuh"

extern "C" __global__ void scan_blelloch_totals(const float* __restrict__ y, float* __restrict__ totals, int count) {
    scan_propagate_totals<TILE>(y, totals, count);
}

extern "C" __global__ void scan_blelloch_add(float* __restrict__ y, const float* __restrict__ offsets, int n) {
    scan_propagate_add<TILE>(y, offsets, n);
}
