// nvtx_matmul.cu — the course's profiling example: a naive and a shared-memory tiled matrix multiply
// in one plain CUDA C++ program, each inside an NVTX range, with the copies in ranges of their own.
//
//   nvcc -O2 -lineinfo -arch=native -o nvtx_matmul nvtx_matmul.cu      (NVTX v3 is header-only)
//   ./nvtx_matmul [N]                                                   (N x N matrices, default 1024)
//   gpuprof nsys -- ./nvtx_matmul        gpuprof profile -- ./nvtx_matmul
//
// Ranges: setup, copy_in, matmul/naive, matmul/tiled, copy_out, check.

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                           \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

constexpr int TILE = 16;
constexpr int REPEATS = 3;

// One thread per element of C, reading a row of A and a column of B from global memory.
__global__ void naive_matmul(const float* A, const float* B, float* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n && col < n) {
    float sum = 0.0f;
    for (int k = 0; k < n; ++k) {
      sum += A[row * n + k] * B[k * n + col];
    }
    C[row * n + col] = sum;
  }
}

// The same product, TILE x TILE blocks of A and B staged through shared memory.
__global__ void tiled_matmul(const float* A, const float* B, float* C, int n) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float sum = 0.0f;
  for (int t = 0; t < (n + TILE - 1) / TILE; ++t) {
    int a_col = t * TILE + threadIdx.x;
    int b_row = t * TILE + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < n && a_col < n) ? A[row * n + a_col] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (b_row < n && col < n) ? B[b_row * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) {
      sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    }
    __syncthreads();
  }
  if (row < n && col < n) {
    C[row * n + col] = sum;
  }
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1024;
  if (n <= 0) {
    std::fprintf(stderr, "usage: %s [N > 0]\n", argv[0]);
    return 2;
  }
  size_t bytes = size_t(n) * n * sizeof(float);

  nvtxRangePushA("setup");
  std::vector<float> A(size_t(n) * n), B(size_t(n) * n), C_naive(size_t(n) * n), C_tiled(size_t(n) * n);
  srand(42);
  for (auto& x : A) x = float(rand()) / RAND_MAX - 0.5f;
  for (auto& x : B) x = float(rand()) / RAND_MAX - 0.5f;
  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, bytes));
  CHECK(cudaMalloc(&dB, bytes));
  CHECK(cudaMalloc(&dC, bytes));
  nvtxRangePop();

  nvtxRangePushA("copy_in");
  CHECK(cudaMemcpy(dA, A.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, B.data(), bytes, cudaMemcpyHostToDevice));
  nvtxRangePop();

  dim3 block(TILE, TILE);
  dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
  nvtxRangePushA("matmul");
  nvtxRangePushA("naive");
  CHECK(cudaMemset(dC, 0, bytes));
  for (int r = 0; r < REPEATS; ++r) naive_matmul<<<grid, block>>>(dA, dB, dC, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  nvtxRangePop();
  CHECK(cudaMemcpy(C_naive.data(), dC, bytes, cudaMemcpyDeviceToHost));
  nvtxRangePushA("tiled");
  CHECK(cudaMemset(dC, 0, bytes));
  for (int r = 0; r < REPEATS; ++r) tiled_matmul<<<grid, block>>>(dA, dB, dC, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  nvtxRangePop();
  nvtxRangePop();  // matmul

  nvtxRangePushA("copy_out");
  CHECK(cudaMemcpy(C_tiled.data(), dC, bytes, cudaMemcpyDeviceToHost));
  nvtxRangePop();

  nvtxRangePushA("check");
  double worst = 0.0;
  for (size_t i = 0; i < C_naive.size(); ++i) worst = std::fmax(worst, std::fabs(C_naive[i] - C_tiled[i]));
  for (int s = 0; s < 8; ++s) {  // a few elements against the CPU, in double
    int row = (s * 131) % n, col = (s * 71) % n;
    double ref = 0.0;
    for (int k = 0; k < n; ++k) ref += double(A[size_t(row) * n + k]) * B[size_t(k) * n + col];
    worst = std::fmax(worst, std::fabs(ref - C_tiled[size_t(row) * n + col]));
  }
  nvtxRangePop();
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  std::printf("n=%d: naive and tiled agree, largest difference %.3g\n", n, worst);
  return worst < 1e-2 ? 0 : 1;
}
