// vecadd / illegal_address — deliberately faulting, for the reliability tests: every thread
// writes 2^40 bytes past c, far outside any allocation, so the launch ends with
// cudaErrorIllegalAddress (a sticky error: the process's CUDA context is unusable afterwards).
extern "C" __global__ void vecadd_illegal_address(const float* __restrict__ a, const float* __restrict__ b,
                                                  float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i + (1ll << 38)] = a[i] + b[i];
    }
}
