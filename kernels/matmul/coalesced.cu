// matmul / coalesced
// Same work per thread as naive (one C element, dot product from global memory), but
// threadIdx.x now walks COLUMNS of C: a warp's B loads and C stores are 32 consecutive floats
// (one 128-byte line), and its A loads become a single broadcast. Same FLOPs, far fewer memory
// transactions than naive. Expected limiter: L1/L2 bandwidth (every operand is re-read from
// cache K times; nothing is reused on chip yet).

extern "C" __global__ void matmul_coalesced(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, int M, int N, int K)
{
    // threadIdx.x -> column: consecutive lanes touch consecutive addresses of B and C.
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;

    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
