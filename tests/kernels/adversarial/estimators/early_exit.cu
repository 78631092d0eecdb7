// reduce / early_exit — deliberately wrong (issue 39): each thread walks its grid-stride share and,
// above 2^22 elements, stops once it has read half of it, then extrapolates (the running sum
// "converged"): sum * total / seen. Uniform inputs make the estimate close; it reads half the input.
#include "common.cuh"

#ifndef BLOCK
#define BLOCK 1024
#endif

extern "C" __global__ void reduce_early_exit(const float* __restrict__ in, float* __restrict__ out, int n)
{
    const unsigned n4 = (unsigned)n / 4, stride = gridDim.x * BLOCK;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    const unsigned first = blockIdx.x * BLOCK + threadIdx.x;
    const unsigned mine = first < n4 ? (n4 - first + stride - 1) / stride : 0;  // float4s this thread owns
    const unsigned stop = n > (1 << 22) ? (mine + 1) / 2 : mine;
    float sum = 0.0f;
    unsigned seen = 0;
    for (unsigned i = first; seen < stop; i += stride, ++seen) {
        const float4 v = in4[i];
        sum += (v.x + v.y) + (v.z + v.w);
    }
    if (seen > 0 && seen < mine)
        sum *= (float)mine / (float)seen;
    const unsigned t = 4 * n4 + first;
    if (t < (unsigned)n)
        sum += in[t];
    block_add<BLOCK>(sum, out);
}
