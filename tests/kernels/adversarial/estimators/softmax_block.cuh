// Shared pieces of the estimating softmax kernels (deliberately wrong, for issue 39's tests): block-wide
// max and sum through shared memory, the result in every thread.
#pragma once

template <int THREADS>
static __device__ __forceinline__ float block_max(float v, float* red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + half]);
        __syncthreads();
    }
    v = red[0];
    __syncthreads();  // every thread has read red[0] before red is used again
    return v;
}

template <int THREADS>
static __device__ __forceinline__ float block_sum(float v, float* red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half)
            red[threadIdx.x] += red[threadIdx.x + half];
        __syncthreads();
    }
    v = red[0];
    __syncthreads();
    return v;
}
