// Const-free like the course's kernels, but it writes one of its inputs: taken without --args, and
// the check still calls it WRONG ("modified its inputs").
__global__ void vector_add_scribbles(float *a, float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
        a[i] = 0.0f;
    }
}
