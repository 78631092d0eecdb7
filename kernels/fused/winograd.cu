// fused / winograd
// conv2d -> batchnorm2d (training: batch statistics) -> relu -> maxpool2d 2x2, with the conv done
// by Winograd F(2x2, 3x3) (conv2d/winograd) instead of implicit GEMM. Changed from `fused`: fewer
// multiplies, not faster ones (16 per 2x2 outputs per channel instead of 36 at 3x3), and the tile
// fits the pool: a Winograd output tile is the 2x2 block of outputs at (2 tp .. 2 tp + 1,
// 2 tq .. 2 tq + 1), which is exactly pooling window (tp, tq), so the epilogue never exchanges
// outputs between threads. A larger R x S filter is cut into zero-padded 3x3 chunks, each one more
// channel c' of the transform-domain sums (as conv2d/winograd), so every odd size the family takes
// runs here. Three kernels (plan "winograd_stats_then_apply", after the plan zeroes the 2K sums):
// fused_winograd_filter writes U = G g G^T for every (c', k) into a workspace on every launch;
// fused_winograd, whose `w` is that workspace and whose `y` is the plan's workspace, runs
// conv2d/winograd's pipeline (16 batched GEMMs over BM filters x BN tiles x BK channels per step,
// the input transform in registers on the way into shared memory, the output transform's row half
// in registers and its column half through shared memory), then per (filter, tile): the tile's
// valid outputs (a ragged last row or column convolved and counted, not pooled) into the channel's
// sum and sum of squares (FP32 over the 4, then FP64 across the warp, whose 32 lanes share a
// filter; one FP64 atomic pair per warp), and only a complete window's (max, min) stored;
// fused_winograd_apply (bn_relu_pool_apply.cuh, as `fused`) then normalises, applies relu and picks
// max or min by the sign of gamma. The rate counts direct-convolution FLOPs (flop_count = "nominal").
// Expected limiter: FFMA issue of the batched GEMMs, then shared-memory load issue and the per-step
// patch transform (as conv2d/winograd); the epilogue writes half the conv output's bytes.

#include "../conv2d/winograd_pipeline.cuh"   // the pipeline conv2d/winograd runs

static_assert(BN % 32 == 0, "the epilogue reduces a filter's sums over a warp: BN must be a multiple of 32");

extern "C" __global__ void __launch_bounds__(FILTER_THREADS)
fused_winograd_filter(const float* __restrict__ w, float* __restrict__ u, int C, int K, int R, int S)
{
    winograd_filter_transform(w, u, C, K, R, S);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
fused_winograd(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ gamma,
               const float* __restrict__ beta, float* __restrict__ y, int N, int C, int H, int W, int K, int R, int S)
{
    // The family's signature; here w is the transformed filter U (the plan passes it in w's place),
    // y is the plan's workspace (gamma and beta are the apply kernel's), read in the epilogue.
    extern __shared__ __align__(16) float smem[];    // SMEM_BYTES: two pipeline stages, then Z
    const WinogradBlock blk = winograd_row_half(x, w, smem, N, C, H, W, K, R, S);
    const float* Zs = smem;
    const int P = blk.P, Q = blk.Q, TQ = blk.TQ, TPQ = blk.TPQ, T = blk.T, k0 = blk.k0, t0 = blk.t0;
    const int tid = threadIdx.x;
    // Column half, Y[a][b] = sum_i A[i][a] Z[i][b], and the fused epilogue: one (filter, tile) per
    // thread at a time, tiles fastest across the warp (conflict-free reads, coalesced float2
    // stores). BN % 32 == 0, so the warp's 32 lanes share one filter kk: its sums reduce by
    // shuffles (every lane takes part, contributing 0 where it has no tile) and lane 0 adds them.
    // Batchnorm is a per-channel affine map a*v + b and relu is nondecreasing, so the pooled output
    // is relu(a*max + b) where a >= 0 and relu(a*min + b) where a < 0: (max, min) is all kernel 2
    // needs of a window.
    // The workspace y: 2K doubles of channel sums, then (max, min) per complete window, [N][K][Po][Qo].
    double* __restrict__ stats = reinterpret_cast<double*>(y);
    float2* __restrict__ mm = reinterpret_cast<float2*>(y + 4 * K);
    const int Po = P / 2, Qo = Q / 2;   // pooled output: complete windows only
    const int lane = tid % 32;
#pragma unroll 1                        // unrolled, ptxas spills a main-loop accumulator at 128 registers
    for (int o = 0; o < OUT_PAIRS; ++o) {
        const int e = tid + o * NUM_THREADS;
        const int tt = e % BN, kk = e / BN;
        const int k = k0 + kk, t = t0 + tt;
        float sum = 0.0f, sq = 0.0f;
        if (k < K && t < T) {
            float z[4][2];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int b = 0; b < 2; ++b)
                    z[i][b] = Zs[(2 * i + b) * BM * BN + kk * BN + tt];
            const float y00 = z[0][0] + z[1][0] + z[2][0], y01 = z[0][1] + z[1][1] + z[2][1];
            const float y10 = z[1][0] - z[2][0] - z[3][0], y11 = z[1][1] - z[2][1] - z[3][1];
            const int n = t / TPQ, rest = t - n * TPQ;
            const int tp = rest / TQ, tq = rest - tp * TQ;
            const bool q1 = 2 * tq + 1 < Q, p1 = 2 * tp + 1 < P;   // a ragged last tile row / column
            sum = y00;
            sq = y00 * y00;
            if (q1) { sum += y01; sq = fmaf(y01, y01, sq); }
            if (p1) {
                sum += y10; sq = fmaf(y10, y10, sq);
                if (q1) { sum += y11; sq = fmaf(y11, y11, sq); }
            }
            if (p1 && q1)                   // a complete window (tp < Po, tq < Qo): pooled
                mm[((n * K + k) * Po + tp) * Qo + tq] =
                    make_float2(fmaxf(fmaxf(y00, y01), fmaxf(y10, y11)), fminf(fminf(y00, y01), fminf(y10, y11)));
        }
        double s = sum, s2 = sq;            // FP64 from here: the totals keep E[v^2] - mean^2 clean
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            s += __shfl_xor_sync(0xffffffffu, s, off);
            s2 += __shfl_xor_sync(0xffffffffu, s2, off);
        }
        if (lane == 0 && k < K) {
            atomicAdd(&stats[k], s);
            atomicAdd(&stats[K + k], s2);
        }
    }
}

#ifndef EW_THREADS
#define EW_THREADS 256     // threads per block of the apply kernel
#endif

// Kernel 3 (bn_relu_pool_apply.cuh, as `fused`): one thread per pooled output, the channel's
// (a, b) from the FP64 sums, then relu(a * (a >= 0 ? max : min) + b).
#include "bn_relu_pool_apply.cuh"

extern "C" __global__ void __launch_bounds__(EW_THREADS)
fused_winograd_apply(const float2* __restrict__ mm, const double* __restrict__ stats,
                     const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ y,
                     int N, int K, int PQo, int count, float eps)
{
    bn_relu_pool_apply<EW_THREADS>(mm, stats, gamma, beta, y, N, K, PQo, count, eps);
}
