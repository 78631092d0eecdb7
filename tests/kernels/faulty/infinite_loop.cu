// vecadd / infinite_loop — deliberately hanging, for the reliability tests: thread 0 of block 0
// never leaves its loop (__nanosleep keeps the loop from being optimised away), so the launch
// never completes and only the per-variant timeout ends it.
extern "C" __global__ void vecadd_infinite_loop(const float* __restrict__ a, const float* __restrict__ b,
                                                float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        for (;;) {
            __nanosleep(1000);
        }
    }
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
