// vecadd / divergent_barrier — deliberately broken, for the sanitizer tests: only half of each
// warp reaches the __syncthreads(). synccheck must report a barrier error on the line marked BUG.
extern "C" __global__ void vecadd_divergent_barrier(const float* __restrict__ a, const float* __restrict__ b,
                                                    float* __restrict__ c, int n) {
    __shared__ float staged[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    staged[threadIdx.x] = i < n ? a[i] : 0.0f;
    if (threadIdx.x % 32 < 16) {
        __syncthreads();  // BUG: divergent barrier
    }
    if (i < n) {
        c[i] = staged[threadIdx.x] + b[i];
    }
}
