// vecadd / grid
// Changed from one_block: one thread per element and as many blocks as it takes, so every SM
// has many warps with loads in flight. Expected limiter: DRAM bandwidth.
extern "C" __global__ void vecadd_grid(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
