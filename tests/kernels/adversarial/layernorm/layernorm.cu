// layernorm / block_row: one block per row, the mean, then the variance around it (two passes over
// the row, the second from L1/L2), then y = (x - mean) * rsqrt(var + eps) * gamma + beta.
// Two deliberately wrong builds of the same kernel (issue 39), chosen by defines:
// - SAMPLE_STRIDE = 2: the statistics from every other element, the rest never read for them;
// - EARLY_EXIT = 1: the statistics walk the row a block-wide tile at a time and stop at the first
//   tile that changed neither the sum nor the sum of squares by an ulp ("converged").
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef SAMPLE_STRIDE
#define SAMPLE_STRIDE 1
#endif
#ifndef EARLY_EXIT
#define EARLY_EXIT 0
#endif

static __device__ __forceinline__ float block_sum(float v, float* red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half)
            red[threadIdx.x] += red[threadIdx.x + half];
        __syncthreads();
    }
    v = red[0];
    __syncthreads();  // every thread has read red[0] before red is used again
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) layernorm_block_row(const float* x, const float* gamma,
                                                                        const float* beta, float* y, int rows, int cols)
{
    __shared__ float red[BLOCK];
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = y + (long long)blockIdx.x * cols;
    float mean, var;
    if (EARLY_EXIT) {
        float sum = 0.0f, squares = 0.0f;  // block-wide, the same in every thread
        int seen = 0;
        for (int base = 0; base < cols; base += BLOCK) {
            const int j = base + threadIdx.x;
            const float v = j < cols ? xr[j] : 0.0f;
            const float tile = block_sum(v, red), tile_squares = block_sum(v * v, red);
            seen = min(cols, base + BLOCK);
            const bool converged = base > 0 && fabsf(tile) <= fabsf(sum) * 5.9604645e-8f
                                   && tile_squares <= squares * 5.9604645e-8f;
            sum += tile;
            squares += tile_squares;
            if (converged)
                break;
        }
        mean = sum / seen;
        var = fmaxf(squares / seen - mean * mean, 0.0f);
    } else {
        float s = 0.0f;
        int count = 0;
        for (int j = threadIdx.x * SAMPLE_STRIDE; j < cols; j += BLOCK * SAMPLE_STRIDE) {
            s += xr[j];
            ++count;
        }
        const float n = block_sum((float)count, red);
        mean = block_sum(s, red) / n;
        float d2 = 0.0f;
        for (int j = threadIdx.x * SAMPLE_STRIDE; j < cols; j += BLOCK * SAMPLE_STRIDE) {
            const float d = xr[j] - mean;
            d2 += d * d;
        }
        var = block_sum(d2, red) / n;
    }
    const float rstd = rsqrtf(var + 1e-5f);
    for (int j = threadIdx.x; j < cols; j += BLOCK)
        yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
}
