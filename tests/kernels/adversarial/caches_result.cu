// vecadd / caches_result — deliberately dishonest, for the integrity tests: each block looks at
// the first element it owns and returns at once when it already holds a number (not the NaN
// poison), so every launch after the first on the same buffers does no work. Its check passes;
// only re-poisoning the output before timing and timing a launch on a poisoned output against
// one on a written output (measure/integrity.py) shows it.
extern "C" __global__ void vecadd_caches_result(const float* __restrict__ a, const float* __restrict__ b,
                                                float* __restrict__ c, int n) {
    __shared__ int cached;
    const int first = blockIdx.x * blockDim.x;
    if (threadIdx.x == 0) cached = first < n && c[first] == c[first];  // NaN != NaN: not written yet
    __syncthreads();
    if (cached) return;
    const int i = first + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
