// conv2d / winograd
// Winograd F(2x2, 3x3): each 2x2 output tile of a 3x3 filter costs 16 multiplies per channel in
// the transform domain instead of 36, Y = A^T [ sum_c (G g G^T) . (B^T d B) ] A. Changed from
// `implicit_gemm`: fewer multiplies, not faster ones (2.25x fewer at 3x3). A larger R x S filter is
// cut into ceil(R/3) x ceil(S/3) zero-padded 3x3 chunks, each one more "channel" c' = (c, chunk) of
// the transform-domain sums (1x1 and 5x5 filters pay for the padding taps), so every odd size the
// family takes runs here. Two kernels: conv2d_winograd_filter writes U = G g G^T for every (c', k)
// into a workspace on every launch (K*C' x 16 floats, small); conv2d_winograd, whose `w` parameter
// is that workspace (the plan passes it in w's place), runs the 16 batched GEMMs
// M[xi][k][tile] = sum_c' U[xi][c'][k] V[xi][c'][tile] for BM filters x BN tiles per block: per
// step of BK channels the U tile arrives by cp.async while each thread gathers a 4x4 input patch
// into registers (prefetched one step ahead), transforms it (B^T d B, adds only) and stores V to
// the other shared-memory stage; one barrier per step. Thread group g (a quarter of the block) owns
// the Winograd tile's row g (4 of the 16 elements) for TM filters x TN tiles, so its fragments are
// LDS.128 and it applies the output transform's row half (. A) in registers; the column half
// (A^T .) goes through shared memory, then the 2x2 outputs are stored (ragged edges masked).
// The rate gpuprof reports counts direct-convolution FLOPs (flop_count = "nominal").
// Expected limiter: FFMA issue of the batched GEMMs, then shared-memory load issue (2 LDS.128 per
// 16 FFMA, twice implicit_gemm's share) and the per-step patch transform.

#include "winograd_pipeline.cuh"

extern "C" __global__ void __launch_bounds__(FILTER_THREADS)
conv2d_winograd_filter(const float* __restrict__ w, float* __restrict__ u, int C, int K, int R, int S)
{
    winograd_filter_transform(w, u, C, K, R, S);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
conv2d_winograd(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                int N, int C, int H, int W, int K, int R, int S)
{
    extern __shared__ __align__(16) float smem[];    // SMEM_BYTES: two pipeline stages, then Z
    const WinogradBlock blk = winograd_row_half(x, w, smem, N, C, H, W, K, R, S);   // w: the transformed filter
    const float* Zs = smem;
    const int P = blk.P, Q = blk.Q, TQ = blk.TQ, TPQ = blk.TPQ, T = blk.T, k0 = blk.k0, t0 = blk.t0;
    const int tid = threadIdx.x;
    // Column half: Y[a][b] = sum_i A[i][a] Z[i][b]; one (filter, tile) per thread at a time,
    // tiles fastest across the warp (conflict-free reads, stores along q).
#pragma unroll
    for (int o = 0; o < OUT_PAIRS; ++o) {
        const int e = tid + o * NUM_THREADS;
        const int tt = e % BN, kk = e / BN;
        const int k = k0 + kk, t = t0 + tt;
        if (k >= K || t >= T) continue;
        float z[4][2];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int b = 0; b < 2; ++b)
                z[i][b] = Zs[(2 * i + b) * BM * BN + kk * BN + tt];
        const int n = t / TPQ, rest = t - n * TPQ;
        const int tp = rest / TQ, tq = rest - tp * TQ;
        const int p = 2 * tp, q = 2 * tq;
        float* out = y + ((n * K + k) * P + p) * Q + q;
        const bool q1 = q + 1 < Q, p1 = p + 1 < P;      // a ragged last tile row / column
        out[0] = z[0][0] + z[1][0] + z[2][0];
        if (q1) out[1] = z[0][1] + z[1][1] + z[2][1];
        if (p1) {
            out[Q] = z[1][0] - z[2][0] - z[3][0];
            if (q1) out[Q + 1] = z[1][1] - z[2][1] - z[3][1];
        }
    }
}
