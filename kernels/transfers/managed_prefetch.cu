// transfers / managed_prefetch
// Unified memory: a and b live in cudaMallocManaged memory, prefetched to the GPU
// (cudaMemPrefetchAsync) before the add instead of faulting page by page; c comes back by a copy.
// The kernel is the course's vecadd; the transfers around it are the host side's
// (gpuprof/families/transfers.py, options in family.toml).
extern "C" __global__ void transfers_managed_prefetch(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
