// 2D blocktiling: each thread computes a TM x TN register tile of C as a sum of outer products,
// loading TM values of A and TN values of B from shared memory per k for TM*TN multiply-adds.
// Launch: grid = (ceil(N/BN), ceil(M/BM)), block = BM*BN/(TM*TN).
#pragma once

#include <cassert>
#include <cstdio>
#include <cuda_runtime.h>

#include "common.cuh"

template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)
    sgemm2DBlocktiling(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C) {
  constexpr int THREADS = (BM * BN) / (TM * TN);
  static_assert(BM % TM == 0 && BN % TN == 0, "the thread tile must divide the block tile");
  __shared__ float tileA[BM * BK];
  __shared__ float tileB[BK * BN];
  const int blockRow = blockIdx.y * BM;
  const int blockCol = blockIdx.x * BN;
  const int threadCol = threadIdx.x % (BN / TN);
  const int threadRow = threadIdx.x / (BN / TN);

  float results[TM * TN] = {0.0f};
  float fromA[TM];
  float fromB[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += THREADS) {
      const int r = blockRow + i / BK, c = k0 + i % BK;
      tileA[i] = (r < M && c < K) ? A[r * K + c] : 0.0f;
    }
    for (int i = threadIdx.x; i < BK * BN; i += THREADS) {
      const int r = k0 + i / BN, c = blockCol + i % BN;
      tileB[i] = (r < K && c < N) ? B[r * N + c] : 0.0f;
    }
    __syncthreads();
    #pragma unroll
    for (int p = 0; p < BK; ++p) {
      #pragma unroll
      for (int i = 0; i < TM; ++i) fromA[i] = tileA[(threadRow * TM + i) * BK + p];
      #pragma unroll
      for (int j = 0; j < TN; ++j) fromB[j] = tileB[p * BN + threadCol * TN + j];
      #pragma unroll
      for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) results[i * TN + j] += fromA[i] * fromB[j];
    }
    __syncthreads();
  }
  #pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
    #pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = blockCol + threadCol * TN + j;
      if (row < M && col < N) {
        C[row * N + col] = alpha * results[i * TN + j] + beta * C[row * N + col];
      }
    }
  }
}
