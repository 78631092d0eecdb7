// conv2d / im2col_gemm
// Two kernels: conv2d_im2col_gemm_im2col unrolls x into the column matrix col[n][(c,r,s)][(p,q)]
// (zeros for the padding halo), then conv2d_im2col_gemm, the warp-tiled cp.async SGEMM of
// matmul/warptile, computes y[n][k][pq] = sum over crs of w[k][crs] * col[n][crs][pq] as one GEMM
// over all N*P*Q columns. Changed from `smem_tiled`: the convolution becomes a dense GEMM with
// register tiling (32 FMAs per 3 LDS.128 instead of 8 per 3 loads), at the price of writing and
// re-reading N*C*R*S*P*Q floats. Expected limiter: DRAM for im2col, FFMA issue for the GEMM.
// The GEMM entry keeps the family signature; plan() passes the column matrix in place of x.

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
#define BK 8           // (c, r, s) rows of the column matrix per k tile
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
#ifndef IM2COL_THREADS
#define IM2COL_THREADS 256   // block of the im2col kernel: one thread per (p, q)
#endif

#define NUM_WARPS (NUM_THREADS / 32)
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))   // sub-tiles per warp along M
#define WSUBM (WM / WMITER)                            // rows of one warp sub-tile
#define WSUBN (WN / WNITER)                            // cols of one warp sub-tile
#define AS_LD (BM + PAD)                               // leading dimension of As[k][m]
#define A_COPIES ((BM * BK) / NUM_THREADS)             // 4-byte copies of A (the filter) per thread per tile
#define A_ROW_STEP (NUM_THREADS / BK)                  // A rows between a thread's copies
#define B_COPIES ((BK * BN / 4) / NUM_THREADS)         // 16-byte copies of B per thread per tile
#define B_ROW_STEP (NUM_THREADS / (BN / 4))            // B rows between a thread's copies

static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "NUM_THREADS: a multiple of 32, at most 1024");
static_assert(BM % WM == 0 && BN % WN == 0, "the block tile must be a whole number of warp tiles");
static_assert((BM / WM) * (BN / WN) == NUM_WARPS, "one warp tile per warp: (BM/WM)*(BN/WN) == NUM_THREADS/32");
static_assert(WN % WNITER == 0, "WN must be a multiple of WNITER");
static_assert(WMITER >= 1 && (WM * WN) % (32 * TM * TN * WNITER) == 0, "WM*WN must be a multiple of 32*TM*TN*WNITER");
static_assert(WM % WMITER == 0, "WM must be a multiple of WMITER");
static_assert(WSUBM % TM == 0 && WSUBN % TN == 0, "a warp sub-tile must be a whole number of thread tiles");
static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "a warp sub-tile must hold exactly 32 thread tiles");
static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN must be multiples of 4 (LDS.128 / float4 stores)");
static_assert(PAD % 4 == 0 && BN % 4 == 0, "PAD and BN must be multiples of 4 (16-byte rows and copies)");
static_assert(NUM_THREADS % BK == 0 && (BM * BK) % NUM_THREADS == 0, "A tile must split evenly over the threads");
static_assert((BK * BN / 4) % NUM_THREADS == 0 && B_COPIES >= 1 && NUM_THREADS % (BN / 4) == 0,
              "B tile must split evenly into float4s over the threads, whole rows per pass");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(STAGES * BK * (AS_LD + BN) * 4 <= 48 * 1024, "STAGES tiles of A and B must fit in 48 KB of static shared memory");
static_assert(IM2COL_THREADS % 32 == 0 && IM2COL_THREADS <= 1024, "IM2COL_THREADS: a multiple of 32, at most 1024");

// Pass 1: col[n][kd][pq] = x[n][c][p + r - padH][q + s - padW] (0 outside), kd = (c*R + r)*S + s.
// grid = (ceil(PQ / IM2COL_THREADS), min(C, 65535), min(N, 65535)); y and z stride over the rest.
// A thread writes its pixel's R*S taps of one channel: R*S coalesced row stores, index math once.
// Each x element is read R*S times (from L1/L2); each col element is written once.
extern "C" __global__ void __launch_bounds__(IM2COL_THREADS)
conv2d_im2col_gemm_im2col(const float* __restrict__ x, float* __restrict__ col,
                          int N, int C, int H, int W, int R, int S)
{
    const int padH = (R - 1) / 2, padW = (S - 1) / 2;
    const int P = H + 2 * padH - R + 1, Q = W + 2 * padW - S + 1;
    const int PQ = P * Q, RS = R * S, KD = C * RS;
    const int pq = blockIdx.x * IM2COL_THREADS + threadIdx.x;
    if (pq >= PQ) return;
    const int p = pq / Q, q = pq - p * Q;
    for (int n = blockIdx.z; n < N; n += gridDim.z) {
        for (int c = blockIdx.y; c < C; c += gridDim.y) {
            // This thread's R x S window of x[n][c]; row kd = c*RS + r*S + s of col, column pq.
            const float* xc = x + (n * C + c) * H * W;
            float* cc = col + (n * KD + c * RS) * PQ + pq;
            for (int r = 0; r < R; ++r) {
                const int ih = p - padH + r;
                const bool rowIn = (unsigned)ih < (unsigned)H;
                for (int s = 0; s < S; ++s) {
                    const int iw = q - padW + s;
                    cc[(r * S + s) * PQ] = (rowIn && (unsigned)iw < (unsigned)W) ? xc[ih * W + iw] : 0.0f;
                }
            }
        }
    }
}

// cp.async (sm_80+): global -> shared without passing through registers, tracked in groups.
static __device__ __forceinline__ unsigned smem_addr(const float* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
static __device__ __forceinline__ void cp_async4(float* dst, const float* src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(dst)), "l"(src));
}
static __device__ __forceinline__ void cp_async16(float* dst, const float* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}
// Zero-fill forms: copy `ok ? size : 0` bytes and fill the rest with zeros, so an element
// outside the matrices lands in shared memory as 0.0f (src must still be a valid address).
static __device__ __forceinline__ void cp_async4_zfill(float* dst, const float* src, bool ok)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(ok ? 4 : 0));
}
static __device__ __forceinline__ void cp_async16_zfill(float* dst, const float* src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(ok ? 16 : 0));
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

// Pass 2: y[n][k][pq] = sum over kd of w[k][kd] * col[n][kd][pq]; GEMM column j = n*PQ + pq.
// `x` is the column matrix written by pass 1 (N*KD*PQ floats), not the input image.
extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
conv2d_im2col_gemm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                   int N, int C, int H, int W, int K, int R, int S)
{
    __shared__ __align__(16) float As[STAGES][BK * AS_LD];   // filter tile, transposed: [crs][k]
    __shared__ __align__(16) float Bs[STAGES][BK * BN];      // column-matrix tile:      [crs][npq]

    const float* __restrict__ col = x;
    const int padH = (R - 1) / 2, padW = (S - 1) / 2;
    const int P = H + 2 * padH - R + 1, Q = W + 2 * padW - S + 1;   // = H, W for odd R, S
    const int PQ = P * Q;
    const int NPQ = N * PQ;           // GEMM columns
    const int KD = C * R * S;         // GEMM depth; w is already the row-major K x KD matrix A

    const int tid = threadIdx.x;
    const int warpIdx = tid / 32;
    const int lane = tid % 32;
    const int warpRow = warpIdx / (BN / WN);
    const int warpCol = warpIdx % (BN / WN);
    const int laneRow = lane / (WSUBN / TN);
    const int laneCol = lane % (WSUBN / TN);
    const int cRow = blockIdx.y * BM;   // first filter of the tile
    const int cCol = blockIdx.x * BN;   // first output pixel (flat n*P*Q + p*Q + q) of the tile
    const int aFrag = warpRow * WM + laneRow * TM;
    const int bFrag = warpCol * WN + laneCol * TN;

    // A (filter) copies: k fastest across lanes, written transposed (as matmul/warptile).
    const int aK = tid % BK, aR = tid / BK;
    const bool fullM = cRow + BM <= K;

    // B copies: 4 consecutive columns per thread; column j lives at col[n*KD*PQ + kd*PQ + pq].
    // When PQ % 4 == 0 the 4 columns share one image and are 16B-aligned: one 16-byte copy.
    const int bR = tid / (BN / 4), bC = (tid % (BN / 4)) * 4;   // + i * B_ROW_STEP rows
    const bool vec = (PQ % 4) == 0;                             // grid-uniform
    int colOff[4];
    bool colOk[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int j = cCol + bC + q;
        colOk[q] = j < NPQ;
        const int n = colOk[q] ? j / PQ : 0;
        colOff[q] = colOk[q] ? n * KD * PQ + (j - n * PQ) : 0;
    }

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j)
            acc[i][j] = 0.0f;
    float fragA[2][WMITER * TM];
    float fragB[2][WNITER * TN];

    const int numTiles = (KD + BK - 1) / BK;

    // Issue the copies of tile `t` into stage `s`; out-of-range elements are zero-filled.
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
        float* bs = &Bs[s][bR * BN + bC];
#pragma unroll
        for (int i = 0; i < B_COPIES; ++i) {
            const int kd = k0 + bR + i * B_ROW_STEP;
            float* dst = bs + i * B_ROW_STEP * BN;
            if (vec) {
                const bool ok = (kd < KD) && colOk[0];
                if (ok) cp_async16(dst, col + colOff[0] + kd * PQ);
                else    cp_async16_zfill(dst, col, false);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const bool ok = (kd < KD) && colOk[q];
                    cp_async4_zfill(dst + q, ok ? col + colOff[q] + kd * PQ : col, ok);
                }
            }
        }
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
                const float4 v = *reinterpret_cast<const float4*>(&Bs[s][k * BN + bFrag + wn * WSUBN + j]);
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

    // Epilogue: GEMM column j = n*PQ + pq goes to y[n][k][pq]; float4 stores when PQ % 4 == 0.
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int cj = cCol + bFrag + wn * WSUBN + j;
            if (cj >= NPQ) continue;
            const int n = cj / PQ, pq = cj - n * PQ;
            float* yb = y + n * K * PQ + pq;    // + k * PQ
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    const int row = cRow + aFrag + wm * WSUBM + i;
                    if (row >= K) continue;
                    const float* a = &acc[wm * TM + i][wn * TN + j];
                    if (vec) {
                        *reinterpret_cast<float4*>(yb + row * PQ) = make_float4(a[0], a[1], a[2], a[3]);
                    } else {
#pragma unroll
                        for (int q = 0; q < 4; ++q) {
                            const int cq = cj + q;
                            if (cq < NPQ) {
                                const int nq = cq / PQ;
                                y[nq * K * PQ + row * PQ + (cq - nq * PQ)] = a[q];
                            }
                        }
                    }
                }
        }
}
