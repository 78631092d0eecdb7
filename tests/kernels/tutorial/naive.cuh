// Naive SGEMM in the tutorial's conventions: C = alpha*A*B + beta*C, row-major, one thread per C
// element. threadIdx.x walks the *rows* of C, so a warp's loads of A and its stores of C are
// K (resp. N) floats apart: uncoalesced on purpose, the first rung of the ladder.
// Launch: grid = (ceil(M/32), ceil(N/32)), block = (32, 32).
#pragma once

#include <cassert>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                            float *C) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float sum = 0.0f;
    for (int p = 0; p < K; ++p) {
      sum += A[row * K + p] * B[p * N + col];
    }
    C[row * N + col] = alpha * sum + beta * C[row * N + col];
  }
}
