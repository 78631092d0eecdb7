// vecadd / racy_smem — deliberately broken, for the sanitizer tests: threads read a neighbour's
// shared-memory slot with no __syncthreads() between the write and the read. racecheck must
// report a hazard on the shared-memory accesses (line marked BUG).
extern "C" __global__ void vecadd_racy_smem(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    __shared__ float staged[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    staged[threadIdx.x] = i < n ? a[i] : 0.0f;
    float neighbour = staged[(threadIdx.x + 32) % blockDim.x];  // BUG: no barrier before this read
    if (i < n) {
        c[i] = neighbour * 0.0f + a[i] + b[i];
    }
}
