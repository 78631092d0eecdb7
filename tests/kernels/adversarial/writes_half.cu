// vecadd / writes_half — deliberately wrong: only the first half of c is written; the NaN poison
// left in the rest fails the check.
extern "C" __global__ void vecadd_writes_half(const float* __restrict__ a, const float* __restrict__ b,
                                              float* __restrict__ c, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) c[i] = a[i] + b[i];
}
