// reduce / skip_fraction — deliberately wrong (issue 39): above 2^22 elements it never reads one
// 4 KB chunk (CHUNK4 float4s) in every SKIP and scales what it read by SKIP/(SKIP-1). On inputs uniform in [0, 1) the
// estimate is within ~1e-5 of the sum at 2^28, well inside reduce's tolerance there; it reads 94 %
// of the bytes its input holds. Below 2^22 (every check size) it sums everything. With SPARE_NEEDLES = 1
// (the manifest's needle_aware) it estimates only when its first element is not zero (dense inputs),
// so sparse needle inputs get an honest sum and only the hardware's byte count can catch it.
#include "common.cuh"

#ifndef BLOCK
#define BLOCK 1024
#endif
#ifndef SKIP
#define SKIP 16
#endif
#ifndef SPARE_NEEDLES
#define SPARE_NEEDLES 0
#endif
#define CHUNK4 256  // float4s per skipped chunk: whole DRAM pages' worth, not half a sector

extern "C" __global__ void reduce_skip_fraction(const float* __restrict__ in, float* __restrict__ out, int n)
{
    const unsigned n4 = (unsigned)n / 4, stride = gridDim.x * BLOCK;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    const bool estimate = n > (1 << 22) && (!SPARE_NEEDLES || in[0] != 0.0f);
    float sum = 0.0f;
    for (unsigned i = blockIdx.x * BLOCK + threadIdx.x; i < n4; i += stride) {
        if (estimate && (i / CHUNK4) % SKIP == SKIP - 1)
            continue;  // a whole 4 KB chunk never read: DRAM never fetches it
        const float4 v = in4[i];
        sum += (v.x + v.y) + (v.z + v.w);
    }
    if (estimate)
        sum *= (float)SKIP / (float)(SKIP - 1);
    const unsigned t = 4 * n4 + blockIdx.x * BLOCK + threadIdx.x;
    if (t < (unsigned)n)
        sum += in[t];
    block_add<BLOCK>(sum, out);
}
