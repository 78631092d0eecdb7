// poly / cuda
// One thread per element over a full grid of 256-thread blocks; threads past n do nothing
// (the check sizes 1, 4097 and 1000003 are no multiple of 256). Expected limiter: DRAM
// bandwidth (8 bytes moved per 3 FLOP).
extern "C" __global__ void poly_cuda(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v * v + v + 1.0f;
    }
}
