// transfers / streamed
// Changed from pinned: the arrays split into chunks issued round-robin on several streams,
// so one chunk's host->device copy overlaps another's add and a third's copy back.
// The kernel is the course's vecadd; the transfers around it are the host side's
// (gpuprof/families/transfers.py, options in family.toml).
extern "C" __global__ void transfers_streamed(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
