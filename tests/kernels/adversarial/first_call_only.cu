// vecadd / first_call_only — deliberately dishonest: a module-level flag, set when the last block
// of the first launch finishes, makes every later launch return at once. Blocks of the first
// launch all start before the last one ends, so that launch is complete and right.
__device__ int g_done;
__device__ unsigned int g_finished_blocks;

extern "C" __global__ void vecadd_first_call_only(const float* __restrict__ a, const float* __restrict__ b,
                                                  float* __restrict__ c, int n) {
    if (*(volatile int*)&g_done) return;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(&g_finished_blocks, 1u) == gridDim.x - 1) g_done = 1;
}
