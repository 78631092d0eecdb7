// Warptiling: block tile -> warp tile -> thread tile. Each warp owns a WM x WN piece of the block's
// tile and walks it in WMITER x WNITER sub-tiles, so a warp's shared-memory reads stay within a few
// rows (fewer bank conflicts) and each thread's TM x TN results map to registers per sub-tile.
// Launch: grid = (ceil(N/BN), ceil(M/BM)), block = NUM_THREADS.
#pragma once

#include <cassert>
#include <cstdio>
#include <cuda_runtime.h>

#include "tiles.cuh"

constexpr int WARPSIZE = 32;

template <const int BM, const int BN, const int BK, const int WM, const int WN, const int WNITER, const int TM,
          const int TN, const int NUM_THREADS>
__global__ void __launch_bounds__(NUM_THREADS)
    sgemmWarptiling(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C) {
  constexpr int WMITER = (WM * WN) / (WARPSIZE * TM * TN * WNITER);
  constexpr int WSUBM = WM / WMITER;
  constexpr int WSUBN = WN / WNITER;
  static_assert((BM / WM) * (BN / WN) * WARPSIZE == NUM_THREADS, "one warp per warp tile");
  static_assert(WMITER >= 1 && (WSUBN / TN) * (WSUBM / TM) == WARPSIZE, "a warp's threads cover its sub-tile");
  static_assert(BK % 4 == 0 && BN % 4 == 0 && TN % 4 == 0, "float4 loads need multiples of 4");
  __shared__ __align__(16) float tileA[BK * BM];  // transposed: tileA[k * BM + row]
  __shared__ __align__(16) float tileB[BK * BN];

  const int blockRow = blockIdx.y * BM;
  const int blockCol = blockIdx.x * BN;
  const int warp = threadIdx.x / WARPSIZE;
  const int warpCol = warp % (BN / WN);
  const int warpRow = warp / (BN / WN);
  const int lane = threadIdx.x % WARPSIZE;
  const int laneCol = lane % (WSUBN / TN);
  const int laneRow = lane / (WSUBN / TN);

  float results[WMITER * TM * WNITER * TN] = {0.0f};
  float fromA[WMITER * TM];
  float fromB[WNITER * TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    loadTileATransposed<BM, BK, NUM_THREADS>(A, tileA, M, K, blockRow, k0);
    loadTileB<BN, BK, NUM_THREADS>(B, tileB, K, N, k0, blockCol);
    __syncthreads();
    #pragma unroll
    for (int p = 0; p < BK; ++p) {
      #pragma unroll
      for (int sm = 0; sm < WMITER; ++sm)
        #pragma unroll
        for (int i = 0; i < TM; ++i)
          fromA[sm * TM + i] = tileA[p * BM + warpRow * WM + sm * WSUBM + laneRow * TM + i];
      #pragma unroll
      for (int sn = 0; sn < WNITER; ++sn)
        #pragma unroll
        for (int j = 0; j < TN; ++j)
          fromB[sn * TN + j] = tileB[p * BN + warpCol * WN + sn * WSUBN + laneCol * TN + j];
      #pragma unroll
      for (int sm = 0; sm < WMITER; ++sm)
        #pragma unroll
        for (int sn = 0; sn < WNITER; ++sn)
          #pragma unroll
          for (int i = 0; i < TM; ++i)
            #pragma unroll
            for (int j = 0; j < TN; ++j)
              results[(sm * TM + i) * (WNITER * TN) + sn * TN + j] += fromA[sm * TM + i] * fromB[sn * TN + j];
    }
    __syncthreads();
  }
  #pragma unroll
  for (int sm = 0; sm < WMITER; ++sm) {
    #pragma unroll
    for (int sn = 0; sn < WNITER; ++sn) {
      #pragma unroll
      for (int i = 0; i < TM; ++i) {
        const int row = blockRow + warpRow * WM + sm * WSUBM + laneRow * TM + i;
        #pragma unroll
        for (int j = 0; j < TN; j += 4) {
          const int col = blockCol + warpCol * WN + sn * WSUBN + laneCol * TN + j;
          const float *r = &results[(sm * TM + i) * (WNITER * TN) + sn * TN + j];
          storeFour(C, M, N, row, col, make_float4(r[0], r[1], r[2], r[3]), alpha, beta);
        }
      }
    }
  }
}
