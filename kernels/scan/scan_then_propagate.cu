// scan / scan_then_propagate
// Changed from blelloch_conflict_free: each thread scans ITEMS consecutive elements serially in
// registers (float4 loads and stores), so only one total per thread goes through shared memory
// (a short Hillis-Steele scan of BLOCK values). Tiles are ITEMS times longer (4096 elements), so
// the propagate hierarchy is shallower and barriers per element fall ~30x. The 3-kernel
// scan / scan-of-totals / add scheme still reads and writes y twice (16n bytes, not 8n).
// Expected limiter: DRAM bandwidth of the two passes.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 16
#endif
#define TILE (BLOCK * ITEMS)
static_assert(ITEMS % 4 == 0 && ITEMS >= 4 && ITEMS <= 32, "ITEMS is whole float4s, 4..32 registers");
static_assert(BLOCK >= 32 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0, "BLOCK must be a power of two in 32..1024");

extern "C" __global__ void __launch_bounds__(BLOCK) scan_scan_then_propagate(const float* __restrict__ x, float* __restrict__ y,
                                                                             int n) {
    __shared__ float buf[2][BLOCK];
    const int t = threadIdx.x;
    const long long first = (long long)blockIdx.x * TILE + (long long)t * ITEMS;  // this thread's elements
    float v[ITEMS];
#pragma unroll
    for (int q = 0; q < ITEMS; q += 4) {
        const long long i = first + q;
        if (i + 4 <= n) {
            const float4 f = *reinterpret_cast<const float4*>(x + i);
            v[q] = f.x;
            v[q + 1] = f.y;
            v[q + 2] = f.z;
            v[q + 3] = f.w;
        } else {
#pragma unroll
            for (int c = 0; c < 4; ++c) v[q + c] = i + c < n ? x[i + c] : 0.f;
        }
    }
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) v[k] += v[k - 1];  // serial inclusive scan of the thread's run

    int in = 0;  // Hillis-Steele over the BLOCK thread totals
    buf[0][t] = v[ITEMS - 1];
    __syncthreads();
    for (int off = 1; off < BLOCK; off <<= 1) {
        float s = buf[in][t];
        if (t >= off) s += buf[in][t - off];
        buf[in ^ 1][t] = s;
        in ^= 1;
        __syncthreads();
    }
    const float excl = t > 0 ? buf[in][t - 1] : 0.f;  // total of the threads before this one

#pragma unroll
    for (int q = 0; q < ITEMS; q += 4) {
        const long long i = first + q;
        if (i + 4 <= n) {
            *reinterpret_cast<float4*>(y + i) = make_float4(v[q] + excl, v[q + 1] + excl, v[q + 2] + excl, v[q + 3] + excl);
        } else {
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                if (i + c < n) y[i + c] = v[q + c] + excl;
            }
        }
    }
}

// ---- Multi-block: scan-then-propagate (plan() in gpuprof/families/scan.py). The kernel above
// scans each tile on its own; these two then make the scan global, level by level:
// totals gathers the last inclusive value of every full tile, plan() scans those totals with the
// same three kernels (recursively, until one tile holds them), and add adds to each tile the
// scanned total of all tiles before it.
static_assert(TILE % 4 == 0, "add updates float4s: TILE must be a multiple of 4");

// totals[b] = y[(b + 1) * TILE - 1] for b < count (= tiles - 1: the last tile's total is no offset).
extern "C" __global__ void scan_scan_then_propagate_totals(const float* __restrict__ y, float* __restrict__ totals, int count) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < count) totals[b] = y[(long long)(b + 1) * TILE - 1];
}

// y[i] += offsets[b - 1] for i in tile b >= 1; block k of the grid handles tile k + 1.
extern "C" __global__ void scan_scan_then_propagate_add(float* __restrict__ y, const float* __restrict__ offsets, int n) {
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
