// transfers / pinned
// Changed from pageable: the host arrays are page-locked (cudaHostRegister), so the copies are
// plain DMA across the link, issued with cudaMemcpyAsync on one stream. Expected limiter: the link.
// The kernel is the course's vecadd; the transfers around it are the host side's
// (gpuprof/families/transfers.py, options in family.toml).
extern "C" __global__ void transfers_pinned(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
