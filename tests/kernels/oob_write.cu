// vecadd / oob_write — deliberately broken, for the sanitizer tests: the bounds check lets the
// last block write up to 64 elements past the end of c. memcheck must report an invalid
// __global__ write of size 4 on the line marked BUG.
extern "C" __global__ void vecadd_oob_write(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    } else if (i < n + 64) {
        c[i] = 0.0f;  // BUG: out of bounds
    }
}
