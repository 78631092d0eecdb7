// softmax / naive
// One thread per row, three passes over it: the row max, the sum of expf(x - max), then
// y = expf(x - max) / sum. Subtracting the max keeps expf in range (expf(89) is already +inf).
// Neighbouring threads own rows `cols` floats apart, so a warp's 32 loads hit 32 different
// sectors (uncoalesced), and the row crosses the memory system three times. Expected limiter:
// memory latency and sector waste; few threads in flight when rows are few.
extern "C" __global__ void softmax_naive(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (long long)row * cols;
    float* yr = y + (long long)row * cols;
    float m = -3.402823466e38f;  // -FLT_MAX: any finite input replaces it
    for (int j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
    float s = 0.f;
    for (int j = 0; j < cols; ++j) s += expf(xr[j] - m);
    const float inv = 1.f / s;
    for (int j = 0; j < cols; ++j) yr[j] = expf(xr[j] - m) * inv;
}
