// vecadd / one_thread
// One thread adds every element in turn. Nothing runs in parallel, so time grows with n at
// one element per several hundred cycles: this is the serial starting point of the ladder.
extern "C" __global__ void vecadd_one_thread(const float* __restrict__ a, const float* __restrict__ b,
                                             float* __restrict__ c, int n) {
    for (int i = 0; i < n; ++i) {
        c[i] = a[i] + b[i];
    }
}
