// matmul / off_by_one — deliberately wrong, for the tests: every element of C is written, but
// the K loop stops one term early (p < K - 1), so only the error against the reference catches it.
extern "C" __global__ void matmul_off_by_one(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int p = 0; p < K - 1; ++p) {
            acc += A[row * K + p] * B[p * N + col];
        }
        C[row * N + col] = acc;
    }
}
