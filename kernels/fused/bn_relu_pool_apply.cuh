// fused / shared second kernel of the conv-statistics-then-apply plans: plumbing, not a lesson.
// Every variant whose first kernel leaves per-channel FP64 sums (sum, sum of squares over all
// N*P*Q conv outputs) and each complete 2x2 window's (max, min) of the conv output finishes the
// same way: this template, one thread per pooled output. Each variant includes this header and
// declares its own extern "C" entry point (named in its manifest's `helpers`, role `apply`) that
// calls the template with its EW_THREADS.
#pragma once

// One thread per pooled output y[n][k][po][qo] (flat, qo fastest): the channel's batch mean and
// biased variance from the FP64 sums, a = gamma * rsqrt(var + eps), b = beta - mean * a, then
// relu(a * (a >= 0 ? max : min) + b): batchnorm is increasing in v where a >= 0 and decreasing
// where a < 0, and relu is nondecreasing, so the window's max of the output comes from its max or
// its min of v. Reads 8 bytes, writes 4.
template <int Threads>
__device__ __forceinline__ void bn_relu_pool_apply(const float2* __restrict__ mm, const double* __restrict__ stats,
                                                   const float* __restrict__ gamma, const float* __restrict__ beta,
                                                   float* __restrict__ y, int N, int K, int PQo, int count, float eps)
{
    const int idx = blockIdx.x * Threads + threadIdx.x;
    if (idx >= N * K * PQo) return;
    const int k = (idx / PQo) % K;
    const double mean = stats[k] / count;
    const double var = fmax(stats[K + k] / count - mean * mean, 0.0);
    const float a = gamma[k] * (float)(1.0 / sqrt(var + (double)eps));
    const float b = fmaf(-(float)mean, a, beta[k]);
    const float2 v = mm[idx];
    y[idx] = fmaxf(fmaf(a, a >= 0.0f ? v.x : v.y, b), 0.0f);
}
