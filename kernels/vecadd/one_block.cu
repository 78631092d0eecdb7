// vecadd / one_block
// Changed from one_thread: the 1024 threads of one block share the array with a block-stride
// loop, so a warp's 32 loads are consecutive (coalesced). Still one SM of 132 does the work,
// so bandwidth is capped by what one SM can keep in flight.
extern "C" __global__ void vecadd_one_block(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        c[i] = a[i] + b[i];
    }
}
