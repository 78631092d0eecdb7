// softmax / online
// Changed from naive: the max and the sum come from one pass (Milakov & Gimelshein's online
// softmax): a running max m and a sum s rescaled by expf(m_old - m_new) whenever the max grows,
// so the row is read twice (stats, then write) instead of three times. Still one thread per row
// with uncoalesced loads. Expected limiter: memory latency and sector waste, as naive.
extern "C" __global__ void softmax_online(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (long long)row * cols;
    float* yr = y + (long long)row * cols;
    float m = -3.402823466e38f;  // -FLT_MAX; the first element sets s = 0 * expf(-huge) + 1 = 1
    float s = 0.f;
    for (int j = 0; j < cols; ++j) {
        const float v = xr[j];
        if (v > m) {  // a new max: rescale what was summed so far; one expf per element either way
            s = s * expf(m - v) + 1.f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    const float inv = 1.f / s;
    for (int j = 0; j < cols; ++j) yr[j] = expf(xr[j] - m) * inv;
}
