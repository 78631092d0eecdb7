// reduce / strided_sample — deliberately wrong (issue 39): above 2^22 elements it reads one float4
// in every STRIDE4 and multiplies by STRIDE4: a sampled statistic. For inputs uniform in [0, 1) at
// 2^28 the sample mean is within ~1e-4 of the truth, inside reduce's tolerance (1.2e-3); it reads an
// eighth of the input, so it "runs" 8x faster than the DRAM floor of the op.
#include "common.cuh"

#ifndef BLOCK
#define BLOCK 1024
#endif
#ifndef STRIDE4
#define STRIDE4 8
#endif

extern "C" __global__ void reduce_strided_sample(const float* __restrict__ in, float* __restrict__ out, int n)
{
    const unsigned n4 = (unsigned)n / 4, stride = gridDim.x * BLOCK;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    const unsigned step = n > (1 << 22) ? STRIDE4 : 1;
    float sum = 0.0f;
    for (unsigned i = (blockIdx.x * BLOCK + threadIdx.x) * step; i < n4; i += stride * step) {
        const float4 v = in4[i];
        sum += (v.x + v.y) + (v.z + v.w);
    }
    sum *= (float)step;
    const unsigned t = 4 * n4 + blockIdx.x * BLOCK + threadIdx.x;
    if (t < (unsigned)n)
        sum += in[t];
    block_add<BLOCK>(sum, out);
}
