// A plain CUDA C++ program in the shape tutorials write it: two matmul kernels (naive with rows
// on threadIdx.x, so loads are uncoalesced; a 32x32 shared-memory tile), launched from main().
// Built with -lineinfo so Nsight Compute can attribute stalls to these source lines:
//   nvcc -O3 -arch=sm_90 -lineinfo -o matmul_lineinfo matmul_lineinfo.cu
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define TILE 32

__global__ void matmul_naive(const float *A, const float *B, float *C, int n) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;  // rows on x: neighbouring threads stride by n
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k)
            acc += A[row * n + k] * B[k * n + col];
        C[row * n + col] = acc;
    }
}

__global__ void matmul_tiled(const float *A, const float *B, float *C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? A[row * n + t + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < n) ? B[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) C[row * n + col] = acc;
}

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2048;
    size_t bytes = size_t(n) * n * sizeof(float);
    std::vector<float> h(size_t(n) * n);
    for (auto &x : h) x = rand() / float(RAND_MAX) - 0.5f;
    float *A, *B, *C;
    CHECK(cudaMalloc(&A, bytes)); CHECK(cudaMalloc(&B, bytes)); CHECK(cudaMalloc(&C, bytes));
    CHECK(cudaMemcpy(A, h.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(B, h.data(), bytes, cudaMemcpyHostToDevice));
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    matmul_naive<<<grid, block>>>(A, B, C, n);
    CHECK(cudaGetLastError());
    matmul_tiled<<<grid, block>>>(A, B, C, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(h.data(), C, bytes, cudaMemcpyDeviceToHost));
    printf("C[0] = %f\n", h[0]);
    cudaFree(A); cudaFree(B); cudaFree(C);
    return 0;
}
