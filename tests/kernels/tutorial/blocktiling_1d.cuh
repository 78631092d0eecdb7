// 1D blocktiling: a block computes a BM x BN tile of C with BM*BN/TM threads; each thread keeps TM
// results of one column in registers and reuses one B value from a register for all of them, so a
// shared-memory load now feeds TM multiply-adds instead of one.
// Launch: grid = (ceil(N/BN), ceil(M/BM)) (blockIdx.x picks the block column), block = BM*BN/TM.
#pragma once

#include <cassert>
#include <cstdio>
#include <cuda_runtime.h>

#include "common.cuh"

template <const int BM, const int BN, const int BK, const int TM>
__global__ void sgemm1DBlocktiling(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                   float *C) {
  constexpr int THREADS = BM * BN / TM;
  static_assert(BM % TM == 0, "TM must divide BM");
  __shared__ float tileA[BM * BK];
  __shared__ float tileB[BK * BN];
  const int blockRow = blockIdx.y * BM;
  const int blockCol = blockIdx.x * BN;
  const int threadCol = threadIdx.x % BN;
  const int threadRow = threadIdx.x / BN;  // in [0, BM/TM)

  float results[TM] = {0.0f};
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
      const float b = tileB[p * BN + threadCol];
      #pragma unroll
      for (int t = 0; t < TM; ++t) {
        results[t] += tileA[(threadRow * TM + t) * BK + p] * b;
      }
    }
    __syncthreads();
  }
  const int col = blockCol + threadCol;
  #pragma unroll
  for (int t = 0; t < TM; ++t) {
    const int row = blockRow + threadRow * TM + t;
    if (row < M && col < N) {
      C[row * N + col] = alpha * results[t] + beta * C[row * N + col];
    }
  }
}
