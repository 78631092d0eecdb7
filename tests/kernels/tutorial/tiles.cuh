// Tile loaders shared by the vectorized and warptiling kernels: float4 global loads where a whole
// aligned vector is in range (rows a multiple of 4 floats long), scalar loads with zero fill at the
// edges. A is stored transposed (k-major) so a thread's TM values of A are contiguous in shared memory.
#pragma once

#include <cuda_runtime.h>

template <const int BM, const int BK, const int THREADS>
__device__ __forceinline__ void loadTileATransposed(const float *A, float *tileA, int M, int K, int blockRow, int k0) {
  const bool rowsAligned = (K % 4) == 0;
  for (int i = threadIdx.x; i < BM * BK / 4; i += THREADS) {
    const int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
    const int gr = blockRow + r, gc = k0 + c;
    if (rowsAligned && gr < M && gc + 3 < K) {
      const float4 v = *reinterpret_cast<const float4 *>(&A[gr * K + gc]);
      tileA[(c + 0) * BM + r] = v.x;
      tileA[(c + 1) * BM + r] = v.y;
      tileA[(c + 2) * BM + r] = v.z;
      tileA[(c + 3) * BM + r] = v.w;
    } else {
      for (int e = 0; e < 4; ++e) tileA[(c + e) * BM + r] = (gr < M && gc + e < K) ? A[gr * K + gc + e] : 0.0f;
    }
  }
}

template <const int BN, const int BK, const int THREADS>
__device__ __forceinline__ void loadTileB(const float *B, float *tileB, int K, int N, int k0, int blockCol) {
  const bool rowsAligned = (N % 4) == 0;
  for (int i = threadIdx.x; i < BK * BN / 4; i += THREADS) {
    const int r = i / (BN / 4), c = (i % (BN / 4)) * 4;
    const int gr = k0 + r, gc = blockCol + c;
    if (rowsAligned && gr < K && gc + 3 < N) {
      *reinterpret_cast<float4 *>(&tileB[r * BN + c]) = *reinterpret_cast<const float4 *>(&B[gr * N + gc]);
    } else {
      for (int e = 0; e < 4; ++e) tileB[r * BN + c + e] = (gr < K && gc + e < N) ? B[gr * N + gc + e] : 0.0f;
    }
  }
}

// Four results of one row into C = alpha*result + beta*C: one float4 read and write where it fits.
// The results come by value: a pointer into the caller's register array would put it on the stack.
__device__ __forceinline__ void storeFour(float *C, int M, int N, int row, int col, float4 result, float alpha,
                                          float beta) {
  if (row >= M) return;
  if ((N % 4) == 0 && col + 3 < N) {
    float4 c = *reinterpret_cast<float4 *>(&C[row * N + col]);
    c.x = alpha * result.x + beta * c.x;
    c.y = alpha * result.y + beta * c.y;
    c.z = alpha * result.z + beta * c.z;
    c.w = alpha * result.w + beta * c.w;
    *reinterpret_cast<float4 *>(&C[row * N + col]) = c;
  } else {
    const float values[4] = {result.x, result.y, result.z, result.w};
    for (int e = 0; e < 4 && col + e < N; ++e) C[row * N + col + e] = alpha * values[e] + beta * C[row * N + col + e];
  }
}
