// gelu / cuda
// One thread per element: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the tanh form PyTorch
// computes for gelu(x, approximate="tanh"). 8 bytes move per element for about a dozen FLOPs, so the
// expected limiter is DRAM bandwidth; tanhf is a short polynomial here, not the SFU's tanh.approx.
extern "C" __global__ void gelu_cuda(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
