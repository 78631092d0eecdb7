// transfers / pageable
// cudaMemcpy from ordinary (pageable) host memory: the driver stages every byte through
// its own pinned buffer, and the host waits for it. The course's first version of the program.
// The kernel is the course's vecadd; the transfers around it are the host side's
// (gpuprof/families/transfers.py, options in family.toml).
extern "C" __global__ void transfers_pageable(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
