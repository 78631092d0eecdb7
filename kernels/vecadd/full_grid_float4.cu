// vecadd / full_grid_float4
// Changed from vectorized: no grid-stride loop. A full grid of short-lived blocks, each thread
// issuing UNROLL independent 16-byte loads of a and of b before any add, at addresses a block
// apart so every load instruction of a warp is one contiguous 512-byte run. The persistent grid of
// `vectorized` leaves each SM's DRAM streams to a few long-lived blocks and ends with a ragged last
// pass; a full grid lets the block scheduler keep every SM fed to the very end (the shape of
// PyTorch's and Triton's elementwise kernels). Expected limiter: DRAM bandwidth.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
vecadd_full_grid_float4(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
    const int n4 = n / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* c4 = reinterpret_cast<float4*>(c);
    const long long first = static_cast<long long>(blockIdx.x) * (BLOCK * UNROLL) + threadIdx.x;
    float4 x[UNROLL], y[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {  // every load first, so UNROLL pairs are in flight at once
        const long long i = first + u * BLOCK;
        if (i < n4) {
            x[u] = a4[i];
            y[u] = b4[i];
        }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        const long long i = first + u * BLOCK;
        if (i < n4) {
            c4[i] = make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w);
        }
    }
    // Tail: the last n % 4 elements, done by the first block's first threads.
    if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) {
        const int t = 4 * n4 + threadIdx.x;
        c[t] = a[t] + b[t];
    }
}
