// Shared-memory blocking: each block stages a TILE x TILE tile of A and of B in shared memory and
// every thread reads them TILE times from there instead of from global memory. One C element per
// thread; the block is one-dimensional (TILE*TILE threads), threadIdx.x % TILE walks columns.
// Launch: grid = (ceil(M/TILE), ceil(N/TILE)) (blockIdx.x picks the block row), block = TILE*TILE.
#pragma once

#include <cassert>
#include <cstdio>
#include <cuda_runtime.h>

template <const int TILE>
__global__ void sgemm_shared_mem_block(int M, int N, int K, float alpha, const float *A, const float *B,
                                       float beta, float *C) {
  __shared__ float tileA[TILE * TILE];
  __shared__ float tileB[TILE * TILE];
  const int localRow = threadIdx.x / TILE;
  const int localCol = threadIdx.x % TILE;
  const int row = blockIdx.x * TILE + localRow;
  const int col = blockIdx.y * TILE + localCol;

  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // Out-of-range elements load as zero, so the inner loop needs no bounds test.
    tileA[localRow * TILE + localCol] = (row < M && k0 + localCol < K) ? A[row * K + k0 + localCol] : 0.0f;
    tileB[localRow * TILE + localCol] = (k0 + localRow < K && col < N) ? B[(k0 + localRow) * N + col] : 0.0f;
    __syncthreads();
    for (int p = 0; p < TILE; ++p) {
      sum += tileA[localRow * TILE + p] * tileB[p * TILE + localCol];
    }
    __syncthreads();
  }
  if (row < M && col < N) {
    C[row * N + col] = alpha * sum + beta * C[row * N + col];
  }
}
