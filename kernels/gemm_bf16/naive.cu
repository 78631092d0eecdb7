// gemm_bf16 / naive
// C = A · Bᵀ in BF16 (A: M×K row-major, B: N×K row-major, i.e. K-major like an nn.Linear weight;
// C: M×N row-major), FP32 accumulation, each C element rounded to nearest-even BF16 once.
// One thread per element of C, the whole K-long dot product straight out of global memory on
// the CUDA cores (BF16 -> FP32 converts and FFMAs, no tensor cores). threadIdx.x walks columns n
// of C, so C stores coalesce and the A element of a step is a broadcast; but B is K-major, so the
// 32 lanes of a warp read 32 different rows of B (stride K): every B load is 32 sectors, served
// from L1 only as long as the warp's 32 B rows (32 x 128-byte lines) stay resident.
// Block (32, 8): TILE_N = 32, TILE_M = 8. Any M, N, K >= 1 (bounds-checked).
// Expected limiter: L1/L2 traffic (uncoalesced B loads), far below the FP32 and tensor-core peaks.

#include "elem.cuh"  // elem_t: BF16, or FP16 under GEMM_ELEM_FP16

extern "C" __global__ void gemm_bf16_naive(const elem_t* __restrict__ A,
                                           const elem_t* __restrict__ B,
                                           elem_t* __restrict__ C, int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;   // n: consecutive lanes, consecutive columns
    const int row = blockIdx.y * blockDim.y + threadIdx.y;   // m

    if (row < M && col < N) {
        const elem_t* a = A + (size_t)row * K;
        const elem_t* b = B + (size_t)col * K;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc = fmaf(elem_to_float(a[k]), elem_to_float(b[k]), acc);
        C[(size_t)row * N + col] = float_to_elem(acc);
    }
}
