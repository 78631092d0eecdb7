// transfers / mapped
// Zero-copy: no copies at all. a, b and c are page-locked and mapped; the kernel's loads and
// stores cross the link themselves (coalesced, so whole 128-byte requests). Expected limiter: the link.
// The kernel is the course's vecadd; the transfers around it are the host side's
// (gpuprof/families/transfers.py, options in family.toml).
extern "C" __global__ void transfers_mapped(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
