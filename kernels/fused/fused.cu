// fused / fused
// conv2d -> batchnorm2d (training: batch statistics) -> relu -> maxpool2d 2x2, in two kernels.
// Batchnorm needs each channel's mean and variance over the whole conv output (N, P, Q) before any
// output can be normalised: a grid-wide dependency, so one pass in one kernel is impossible without
// a grid-wide barrier (a cooperative launch would cap the grid at one wave and hold every block's
// tile in registers across it) or recomputing the conv (twice the FLOPs, the dominant cost).
// Kernel 1 is conv2d/implicit_gemm (warp-tiled, cp.async-pipelined implicit GEMM) whose columns
// are ordered by 2x2 pooling window, with an epilogue that adds per-channel sum and sum of squares
// into FP64 statistics and stores only each window's max and min (see below), so half the conv
// output reaches DRAM. Kernel 2 reads (max, min) once, normalises, applies relu and writes the
// pooled output. The plan zeroes the 2K statistics before kernel 1 (a memset on the stream).
// Expected limiter: FFMA issue in kernel 1 at C = K = 64; DRAM and launch latency at MNIST sizes.

#ifndef NUM_THREADS
#define NUM_THREADS 128
#endif
#ifndef BM
#define BM 64          // filters (output channels) per block tile
#endif
#ifndef BN
#define BN 64          // output pixels (n, p, q) per block tile
#endif
#ifndef BK
#define BK 8           // (c, r, s) taps per k tile
#endif
#ifndef WM
#define WM 32
#endif
#ifndef WN
#define WN 32
#endif
#ifndef WNITER
#define WNITER 2
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#ifndef STAGES
#define STAGES 3       // shared-memory pipeline depth (tiles resident at once)
#endif
#ifndef PAD
#define PAD 4          // floats of padding per k-row of the transposed A tile (keeps 16B rows)
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 4    // blocks per SM promised to the register allocator (__launch_bounds__)
#endif

#define NUM_WARPS (NUM_THREADS / 32)
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))   // sub-tiles per warp along M
#define WSUBM (WM / WMITER)                            // rows of one warp sub-tile
#define WSUBN (WN / WNITER)                            // cols of one warp sub-tile
#define AS_LD (BM + PAD)                               // leading dimension of As[k][m]
#define A_COPIES ((BM * BK) / NUM_THREADS)             // 4-byte copies of A (the filter) per thread per tile
#define A_ROW_STEP (NUM_THREADS / BK)                  // A rows between a thread's copies
#define B_TPR (NUM_THREADS / BK)                       // threads gathering one k-row of the B tile
#define B_COPIES (BN / B_TPR)                          // B columns gathered per thread per tile
#define BS_LD (BN + (B_TPR < 32 ? B_TPR : 0))          // rows shifted so a warp's gather stores hit 32 banks

static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "NUM_THREADS: a multiple of 32, at most 1024");
static_assert(BM % WM == 0 && BN % WN == 0, "the block tile must be a whole number of warp tiles");
static_assert((BM / WM) * (BN / WN) == NUM_WARPS, "one warp tile per warp: (BM/WM)*(BN/WN) == NUM_THREADS/32");
static_assert(WN % WNITER == 0, "WN must be a multiple of WNITER");
static_assert(WMITER >= 1 && (WM * WN) % (32 * TM * TN * WNITER) == 0, "WM*WN must be a multiple of 32*TM*TN*WNITER");
static_assert(WM % WMITER == 0, "WM must be a multiple of WMITER");
static_assert(WSUBM % TM == 0 && WSUBN % TN == 0, "a warp sub-tile must be a whole number of thread tiles");
static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "a warp sub-tile must hold exactly 32 thread tiles");
static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN must be multiples of 4 (LDS.128 / float4 stores)");
static_assert(PAD % 4 == 0 && BN % 32 == 0, "PAD a multiple of 4 (16-byte rows), BN a multiple of 32");
static_assert(NUM_THREADS % BK == 0 && (BM * BK) % NUM_THREADS == 0, "A tile must split evenly over the threads");
static_assert(BN % B_TPR == 0 && B_TPR % 4 == 0,
              "B tile: NUM_THREADS/BK threads (a multiple of 4) per k-row, each gathering BN/(NUM_THREADS/BK) columns");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(STAGES * BK * (AS_LD + BS_LD) * 4 <= 48 * 1024, "STAGES tiles of A and B must fit in 48 KB of static shared memory");

// cp.async (sm_80+): global -> shared without passing through registers, tracked in groups.
static __device__ __forceinline__ unsigned smem_addr(const float* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
static __device__ __forceinline__ void cp_async4(float* dst, const float* src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(dst)), "l"(src));
}
// Zero-fill form: copy `ok ? 4 : 0` bytes and fill the rest with zeros, so a tap in the padding
// halo or outside the GEMM lands in shared memory as 0.0f (src must still be a valid address).
static __device__ __forceinline__ void cp_async4_zfill(float* dst, const float* src, bool ok)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(ok ? 4 : 0));
}
static __device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
static __device__ __forceinline__ void cp_async_wait()        // all but the newest N groups done
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#ifndef EW_THREADS
#define EW_THREADS 256     // threads per block of the elementwise kernel
#endif

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
fused_fused(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ gamma,
            const float* __restrict__ beta, float* __restrict__ y, int N, int C, int H, int W, int K, int R, int S)
{
    // The family's signature; here y is the plan's workspace (gamma and beta are the apply
    // kernel's): 2K doubles of channel sums, then (max, min) per complete window, [N][K][P/2][Q/2].
    double* __restrict__ stats = reinterpret_cast<double*>(y);
    float2* __restrict__ mm = reinterpret_cast<float2*>(y + 4 * K);

    __shared__ __align__(16) float As[STAGES][BK * AS_LD];   // filter tile, transposed: [crs][k]
    __shared__ __align__(16) float Bs[STAGES][BK * BS_LD];   // gathered input tile:     [crs][npq]

    const int padH = (R - 1) / 2, padW = (S - 1) / 2;
    const int P = H + 2 * padH - R + 1, Q = W + 2 * padW - S + 1;   // = H, W for odd R, S
    // GEMM columns in window-major order: column j is pixel j % 4 of 2x2 pooling window j / 4,
    // windows over a ceil(P/2) x ceil(Q/2) grid per image, so ragged odd rows and columns are
    // convolved too (their pixels count in the batch statistics; max_pool2d drops them).
    const int PW = (P + 1) / 2, QW = (Q + 1) / 2;   // window grid, ragged edge included
    const int WPI = PW * QW;                        // windows per image
    const int NPQ = N * WPI * 4;                    // GEMM columns (invalid ragged pixels included)
    const int Po = P / 2, Qo = Q / 2;               // pooled output: complete windows only
    const int RS = R * S;
    const int KD = C * RS;            // GEMM depth; w is already the row-major K x KD matrix A
    const int HW = H * W;

    const int tid = threadIdx.x;
    const int warpIdx = tid / 32;
    const int lane = tid % 32;
    const int warpRow = warpIdx / (BN / WN);
    const int warpCol = warpIdx % (BN / WN);
    const int laneRow = lane / (WSUBN / TN);
    const int laneCol = lane % (WSUBN / TN);
    const int cRow = blockIdx.y * BM;   // first filter of the tile
    const int cCol = blockIdx.x * BN;   // first GEMM column (4 * window + pixel in window) of the tile
    const int aFrag = warpRow * WM + laneRow * TM;
    const int bFrag = warpCol * WN + laneCol * TN;

    // A (filter) copies: k fastest across lanes, written transposed (as matmul/warptile).
    const int aK = tid % BK, aR = tid / BK;
    const bool fullM = cRow + BM <= K;

    // B (input) gather: this thread owns k-row bRow of every B tile and B_COPIES columns, spaced
    // B_TPR apart so a warp's copies are consecutive pixels (coalesced along q). Per column, keep
    // the offset of tap (c, r, s) = (0, 0, 0) and the tap-0 input coordinates (p - padH, q - padW).
    const int bRow = tid / B_TPR, bCol = tid % B_TPR;
    int xOff[B_COPIES], ih0[B_COPIES], iw0[B_COPIES];
#pragma unroll
    for (int i = 0; i < B_COPIES; ++i) {
        const int j = cCol + bCol + i * B_TPR;
        const int win = j >> 2, n = win / WPI, rem = win - n * WPI;
        const int pw = rem / QW, qw = rem - pw * QW;
        const int p = 2 * pw + ((j >> 1) & 1), q = 2 * qw + (j & 1);
        if (j < NPQ && p < P && q < Q) {
            ih0[i] = p - padH;
            iw0[i] = q - padW;
            xOff[i] = n * C * HW + ih0[i] * W + iw0[i];
        } else {
            ih0[i] = H;               // every tap of a column past the end or off the image fails the row check
            iw0[i] = 0;
            xOff[i] = 0;
        }
    }
    // This thread's tap for the next tile to issue, kd = c*RS + r*S + s, and the step by BK taps.
    int tc = bRow / RS, tr = (bRow % RS) / S, ts = bRow % S;
    const int dc = BK / RS, dr = (BK % RS) / S, ds = BK % S;

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j)
            acc[i][j] = 0.0f;
    float fragA[2][WMITER * TM];
    float fragB[2][WNITER * TN];

    const int numTiles = (KD + BK - 1) / BK;

    // Issue the copies of tile `t` into stage `s`. Tiles are issued in order 0, 1, 2, ..., so the
    // thread's tap (tc, tr, ts) is always the one of row bRow of tile t; it advances by BK here.
    auto issueTile = [&](int t, int s) {
        const int k0 = t * BK;
        float* as = &As[s][aK * AS_LD + aR];
        if (fullM && k0 + BK <= KD) {
            const float* a = w + (cRow + aR) * KD + k0 + aK;
#pragma unroll
            for (int i = 0; i < A_COPIES; ++i)
                cp_async4(as + i * A_ROW_STEP, a + i * A_ROW_STEP * KD);
        } else {
#pragma unroll
            for (int i = 0; i < A_COPIES; ++i) {
                const int r = aR + i * A_ROW_STEP;
                const bool ok = (cRow + r < K) && (k0 + aK < KD);
                cp_async4_zfill(as + i * A_ROW_STEP, ok ? w + (cRow + r) * KD + k0 + aK : w, ok);
            }
        }
        const bool rowOk = tc < C;                       // kd < KD
        const int tapOff = tc * HW + tr * W + ts;
        float* bs = &Bs[s][bRow * BS_LD + bCol];
#pragma unroll
        for (int i = 0; i < B_COPIES; ++i) {
            const bool ok = rowOk && (unsigned)(ih0[i] + tr) < (unsigned)H && (unsigned)(iw0[i] + ts) < (unsigned)W;
            cp_async4_zfill(bs + i * B_TPR, ok ? x + xOff[i] + tapOff : x, ok);
        }
        ts += ds; tr += dr; tc += dc;                    // next tile: kd += BK
        if (ts >= S) { ts -= S; ++tr; }
        if (tr >= R) { tr -= R; ++tc; }
    };
    // Fragments of k-row k of stage s -> fragA[f], fragB[f] (LDS.128 each).
    auto loadFrags = [&](int s, int k, int f) {
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&As[s][k * AS_LD + aFrag + wm * WSUBM + i]);
                fragA[f][wm * TM + i + 0] = v.x; fragA[f][wm * TM + i + 1] = v.y;
                fragA[f][wm * TM + i + 2] = v.z; fragA[f][wm * TM + i + 3] = v.w;
            }
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[s][k * BS_LD + bFrag + wn * WSUBN + j]);
                fragB[f][wn * TN + j + 0] = v.x; fragB[f][wn * TN + j + 1] = v.y;
                fragB[f][wn * TN + j + 2] = v.z; fragB[f][wn * TN + j + 3] = v.w;
            }
    };

    // Prologue: tiles 0 .. STAGES-2 in flight (one commit group each, empty past the end).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < numTiles) issueTile(s, s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();                // tile 0 has landed (for this thread) ...
    __syncthreads();                            // ... and for every thread
    loadFrags(0, 0, 0);

    int sRead = 0;                              // stage holding tile t
    int sWrite = STAGES - 1;                    // stage for tile t + STAGES - 1
    for (int t = 0; t < numTiles; ++t) {
        // Refill the stage read during tile t-1: every thread passed the barrier at the end of
        // tile t-1 after its last read of it. Always commit, so the group count stays fixed.
        if (t + STAGES - 1 < numTiles) issueTile(t + STAGES - 1, sWrite);
        cp_async_commit();

        const int sNext = (sRead + 1 == STAGES) ? 0 : sRead + 1;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k < BK - 1) {
                loadFrags(sRead, k + 1, (k + 1) & 1);
            } else if (t + 1 < numTiles) {
                cp_async_wait<STAGES - 2>();    // tile t+1 has landed
                __syncthreads();                // one barrier per tile
                loadFrags(sNext, 0, (k + 1) & 1);
            }
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j)
                    acc[i][j] += fragA[k & 1][i] * fragB[k & 1][j];
        }
        sWrite = sRead;
        sRead = sNext;
    }

    // Epilogue. Each thread's TN = 4 consecutive columns (aligned to 4) are one pooling window.
    // (1) Per-channel sum and sum of squares of the valid conv outputs of this block, reduced over
    //     the 4 lanes and the BN/WN warps that share a row, then added into stats[k], stats[K + k]
    //     in FP64 (atomics: one per channel per block; the FP64 total keeps E[v^2] - mean^2 clean).
    // (2) The window's max and min, stored as one float2 per complete window: batchnorm is a per-
    //     channel affine map a*v + b (increasing when a >= 0, decreasing when a < 0) and relu is
    //     nondecreasing, so max over the window of relu(a*v + b) = relu(a*max + b) or relu(a*min + b).
    //     The full conv output never goes to DRAM: half its size does (max, min per window).
    static_assert(TN == 4, "the fused epilogue maps a thread's 4 columns onto one 2x2 pooling window");
    float rowSum[WMITER * TM], rowSq[WMITER * TM];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i) { rowSum[i] = 0.0f; rowSq[i] = 0.0f; }
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn) {
        const int col = cCol + bFrag + wn * WSUBN;       // first column of this thread's window
        const int win = col >> 2, n = win / WPI, rem = win - n * WPI;
        const int pw = rem / QW, qw = rem - pw * QW;
        bool ok[4];
#pragma unroll
        for (int d = 0; d < 4; ++d)
            ok[d] = col < NPQ && 2 * pw + (d >> 1) < P && 2 * qw + (d & 1) < Q;
        const bool whole = col < NPQ && pw < Po && qw < Qo;   // a complete 2x2 window: pooled
        float2* out = mm + (size_t)n * K * Po * Qo + pw * Qo + qw;   // + k * Po * Qo
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const float* a = &acc[wm * TM + i][wn * TN];
                float mx = -3.402823466e38f, mn = 3.402823466e38f;   // -FLT_MAX, FLT_MAX: only complete windows are stored
#pragma unroll
                for (int d = 0; d < 4; ++d)
                    if (ok[d]) {
                        rowSum[wm * TM + i] += a[d];
                        rowSq[wm * TM + i] = fmaf(a[d], a[d], rowSq[wm * TM + i]);
                        mx = fmaxf(mx, a[d]);
                        mn = fminf(mn, a[d]);
                    }
                const int row = cRow + aFrag + wm * WSUBM + i;
                if (whole && row < K)
                    out[(size_t)row * Po * Qo] = make_float2(mx, mn);
            }
    }
    // Lanes of one laneRow share rows: lane % (WSUBN / TN) is the column position.
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int off = 1; off < WSUBN / TN; off <<= 1) {
            rowSum[i] += __shfl_xor_sync(0xffffffffu, rowSum[i], off);
            rowSq[i] += __shfl_xor_sync(0xffffffffu, rowSq[i], off);
        }
    __shared__ float redSum[BN / WN][BM], redSq[BN / WN][BM];
    if (laneCol == 0) {
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                redSum[warpCol][aFrag + wm * WSUBM + i] = rowSum[wm * TM + i];
                redSq[warpCol][aFrag + wm * WSUBM + i] = rowSq[wm * TM + i];
            }
    }
    __syncthreads();
    for (int r = tid; r < BM; r += NUM_THREADS) {
        const int row = cRow + r;
        if (row >= K) continue;
        double s = 0.0, q2 = 0.0;
#pragma unroll
        for (int c = 0; c < BN / WN; ++c) { s += redSum[c][r]; q2 += redSq[c][r]; }
        atomicAdd(&stats[row], s);
        atomicAdd(&stats[K + row], q2);
    }
}

// Kernel 2 (bn_relu_pool_apply.cuh): one thread per pooled output, the channel's (a, b) from the
// FP64 sums, then relu(a * (a >= 0 ? max : min) + b).
#include "bn_relu_pool_apply.cuh"

extern "C" __global__ void __launch_bounds__(EW_THREADS)
fused_bn_relu_pool_apply(const float2* __restrict__ mm, const double* __restrict__ stats,
                         const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ y,
                         int N, int K, int PQo, int count, float eps)
{
    bn_relu_pool_apply<EW_THREADS>(mm, stats, gamma, beta, y, N, K, PQo, count, eps);
}
