// vecadd / wrong — deliberately wrong, for the tests: it forgets the last element of every
// block of 256, so the check must report WRONG (unwritten NaNs) and give it no speedup.
extern "C" __global__ void vecadd_wrong(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && threadIdx.x != blockDim.x - 1) {
        c[i] = a[i] + b[i];
    }
}
