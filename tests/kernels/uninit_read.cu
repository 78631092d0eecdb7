// vecadd / uninit_read — deliberately broken, for the sanitizer tests: it accumulates into c
// (c += a + b) though nothing initialised c. initcheck must report an uninitialized __global__
// read on the line marked BUG.
extern "C" __global__ void vecadd_uninit_read(const float* __restrict__ a, const float* __restrict__ b,
                                              float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = c[i] + a[i] + b[i];  // BUG: c was never written
    }
}
