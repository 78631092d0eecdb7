// The shape the CUDA course writes a vector add in: plain float* parameters (no const, no
// __restrict__), in vecadd's order (a, b, c, n). gpuprof takes it as vecadd's signature without --args.
__global__ void vector_add_gpu_1d(float *a, float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
