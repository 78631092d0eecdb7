// Vectorized 2D blocktiling: as sgemm2DBlocktiling, with float4 global loads and stores (LDG.128 /
// STG.128) and A kept transposed in shared memory so its TM values per k are one contiguous read.
// Launch: grid = (ceil(N/BN), ceil(M/BM)), block = BM*BN/(TM*TN).
#pragma once

#include <cassert>
#include <cstdio>
#include <cuda_runtime.h>

#include "tiles.cuh"

template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)
    sgemmVectorize(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C) {
  constexpr int THREADS = (BM * BN) / (TM * TN);
  static_assert(BK % 4 == 0 && BN % 4 == 0 && TN % 4 == 0, "float4 loads need multiples of 4");
  __shared__ __align__(16) float tileA[BK * BM];  // transposed: tileA[k * BM + row]
  __shared__ __align__(16) float tileB[BK * BN];
  const int blockRow = blockIdx.y * BM;
  const int blockCol = blockIdx.x * BN;
  const int threadCol = threadIdx.x % (BN / TN);
  const int threadRow = threadIdx.x / (BN / TN);

  float results[TM * TN] = {0.0f};
  float fromA[TM];
  float fromB[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    loadTileATransposed<BM, BK, THREADS>(A, tileA, M, K, blockRow, k0);
    loadTileB<BN, BK, THREADS>(B, tileB, K, N, k0, blockCol);
    __syncthreads();
    #pragma unroll
    for (int p = 0; p < BK; ++p) {
      #pragma unroll
      for (int i = 0; i < TM; ++i) fromA[i] = tileA[p * BM + threadRow * TM + i];
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
    for (int j = 0; j < TN; j += 4) {
      const float *r = &results[i * TN + j];
      storeFour(C, M, N, row, blockCol + threadCol * TN + j, make_float4(r[0], r[1], r[2], r[3]), alpha, beta);
    }
  }
}
