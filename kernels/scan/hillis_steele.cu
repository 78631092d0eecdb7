// scan / hillis_steele
// Inclusive scan of one tile of BLOCK elements per block, one element per thread (Hillis & Steele):
// log2(BLOCK) steps, each adding the value `off` places to the left, double-buffered in shared
// memory so a step reads one buffer and writes the other with one __syncthreads(). O(n log n)
// additions. Multi-block by scan-then-propagate (below). Expected limiter: shared-memory traffic
// and barriers (10 steps per element), plus the propagate pass's extra read and write of y.
#ifndef BLOCK
#define BLOCK 1024
#endif
#define TILE BLOCK
static_assert(BLOCK >= 32 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0, "BLOCK must be a power of two in 32..1024");

extern "C" __global__ void __launch_bounds__(BLOCK) scan_hillis_steele(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float buf[2][BLOCK];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * TILE + t;
    int in = 0;
    buf[0][t] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int off = 1; off < BLOCK; off <<= 1) {
        float v = buf[in][t];
        if (t >= off) v += buf[in][t - off];
        buf[in ^ 1][t] = v;  // the other buffer: nobody reads it during this step
        in ^= 1;
        __syncthreads();
    }
    if (i < n) y[i] = buf[in][t];
}

// ---- Multi-block: scan-then-propagate (plan() in gpuprof/families/scan.py). The kernel above
// scans each tile on its own; these two then make the scan global, level by level:
// totals gathers the last inclusive value of every full tile, plan() scans those totals with the
// same three kernels (recursively, until one tile holds them), and add adds to each tile the
// scanned total of all tiles before it.
static_assert(TILE % 4 == 0, "add updates float4s: TILE must be a multiple of 4");

// totals[b] = y[(b + 1) * TILE - 1] for b < count (= tiles - 1: the last tile's total is no offset).
extern "C" __global__ void scan_hillis_steele_totals(const float* __restrict__ y, float* __restrict__ totals, int count) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < count) totals[b] = y[(long long)(b + 1) * TILE - 1];
}

// y[i] += offsets[b - 1] for i in tile b >= 1; block k of the grid handles tile k + 1.
extern "C" __global__ void scan_hillis_steele_add(float* __restrict__ y, const float* __restrict__ offsets, int n) {
    const long long base = (long long)(blockIdx.x + 1) * TILE;
    const float off = offsets[blockIdx.x];
    for (int j = 4 * threadIdx.x; j < TILE; j += 4 * blockDim.x) {
        const long long i = base + j;
        if (i + 4 <= n) {
            float4 v = *reinterpret_cast<float4*>(y + i);
            v.x += off;
            v.y += off;
            v.z += off;
            v.w += off;
            *reinterpret_cast<float4*>(y + i) = v;
        } else {
            for (long long k = i; k < n; ++k) y[k] += off;  // the ragged end of the last tile
        }
    }
}
