// The shape the CUDA course writes its tiled matmul in: (float* A, float* B, float* C, int M, int N,
// int K), matmul's order without const. 16x16 shared-memory tiles, bounds-checked loads and store.
#define TILE_SIZE 16

__global__ void matrixMultiplyOptimized(float* A, float* B, float* C, int M, int N, int K) {
    __shared__ float sharedA[TILE_SIZE][TILE_SIZE];
    __shared__ float sharedB[TILE_SIZE][TILE_SIZE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_SIZE + ty;
    int col = blockIdx.x * TILE_SIZE + tx;
    float sum = 0.0f;
    for (int tile = 0; tile < (K + TILE_SIZE - 1) / TILE_SIZE; ++tile) {
        int k = tile * TILE_SIZE;
        sharedA[ty][tx] = (row < M && k + tx < K) ? A[row * K + k + tx] : 0.0f;
        sharedB[ty][tx] = (col < N && k + ty < K) ? B[(k + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE_SIZE; ++i) {
            sum += sharedA[ty][i] * sharedB[i][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[row * N + col] = sum;
    }
}
