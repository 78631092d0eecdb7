// matmul / naive
// One thread per element of C; each thread runs the whole K-long dot product straight out of
// global memory. The first rung of the ladder: the classic mistake is that threadIdx.x walks
// ROWS of C, so the 32 lanes of a warp touch 32 different rows: A loads (stride K) and C stores
// (stride N) are uncoalesced, 32 separate sectors per warp access, while B loads are broadcasts.
// Expected limiter: memory transactions (L1/L2 traffic), far below the FP32 FMA peak.

extern "C" __global__ void matmul_naive(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K)
{
    // threadIdx.x -> row: consecutive lanes get consecutive ROWS (the mistake this rung shows).
    const int row = blockIdx.y * blockDim.x + threadIdx.x;
    const int col = blockIdx.x * blockDim.y + threadIdx.y;

    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
