// matmul / multistage
// warptile with a deeper cp.async pipeline: STAGES tiles of A and B resident at once (default 4,
// warptile: 2) in DYNAMIC shared memory, which may exceed the 48 KB a static array is allowed;
// the launch raises the kernel's limit (manifest key dynamic_smem). Up to STAGES-1 tiles are in
// flight while one is computed, so global-memory latency is hidden even with only 8 warps per SM
// (one 256-thread block at ~240 registers per thread fills the register file).
// Expected limiter: FFMA issue (~90% of issued instructions), then register-bank dispatch stalls
// and the one barrier per BK tile; no longer waits on global loads (long-scoreboard stalls).

#ifndef NUM_THREADS
#define NUM_THREADS 256
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef WNITER
#define WNITER 4
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#ifndef STAGES
#define STAGES 4       // shared-memory pipeline depth (tiles resident at once)
#endif
#ifndef PAD
#define PAD 4          // floats of padding per k-row of the transposed A tile (keeps 16B rows)
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 1    // blocks per SM promised to the register allocator (__launch_bounds__)
#endif

#define NUM_WARPS (NUM_THREADS / 32)
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))   // sub-tiles per warp along M
#define WSUBM (WM / WMITER)                            // rows of one warp sub-tile
#define WSUBN (WN / WNITER)                            // cols of one warp sub-tile
#define AS_LD (BM + PAD)                               // leading dimension of As[k][m]
#define A_COPIES ((BM * BK) / NUM_THREADS)             // 4-byte copies of A per thread per tile
#define B_COPIES ((BK * BN / 4) / NUM_THREADS)         // 16-byte copies of B per thread per tile
#define A_ROW_STEP (NUM_THREADS / BK)                  // A rows between a thread's copies
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
static_assert(BK % 4 == 0 && PAD % 4 == 0, "BK and PAD must be multiples of 4 (16-byte copies and rows)");
static_assert((BM * BK) % NUM_THREADS == 0 && NUM_THREADS % BK == 0, "A tile must split evenly over the threads");
static_assert((BK * BN / 4) % NUM_THREADS == 0 && B_COPIES >= 1 && NUM_THREADS % (BN / 4) == 0,
              "B tile must split evenly into float4s over the threads, whole rows per pass");
#define SMEM_BYTES (STAGES * BK * (AS_LD + BN) * 4)  // = the manifest's dynamic_smem
#define MAX_SMEM_OPTIN (227 * 1024)                   // Hopper's per-block opt-in limit

static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(SMEM_BYTES <= MAX_SMEM_OPTIN, "STAGES tiles of A and B must fit in 227 KB of dynamic shared memory (Hopper's opt-in limit)");

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
// outside the matrix lands in shared memory as 0.0f (src must still be a valid address).
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

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
matmul_multistage(const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C, int M, int N, int K)
{
    // Dynamic shared memory: STAGES A tiles, then STAGES B tiles (the launch passes SMEM_BYTES).
    extern __shared__ __align__(16) float smem[];
    float(*As)[BK * AS_LD] = reinterpret_cast<float(*)[BK * AS_LD]>(smem);   // transposed + padded: [k][m]
    float(*Bs)[BK * BN] = reinterpret_cast<float(*)[BK * BN]>(smem + STAGES * BK * AS_LD);  // [k][n]

    const int tid = threadIdx.x;
    const int warpIdx = tid / 32;
    const int lane = tid % 32;
    const int warpRow = warpIdx / (BN / WN);
    const int warpCol = warpIdx % (BN / WN);
    const int laneRow = lane / (WSUBN / TN);
    const int laneCol = lane % (WSUBN / TN);
    const int cRow = blockIdx.y * BM;
    const int cCol = blockIdx.x * BN;

    // Where this thread's fragments start inside one k-row of As / Bs (plus wm*WSUBM, wn*WSUBN).
    // A warp's lanes cover WSUBM/TM (WSUBN/TN) adjacent groups of TM (TN) floats, so each
    // fragment LDS.128 of the warp reads one contiguous run of <= 128 bytes: one wavefront.
    const int aFrag = warpRow * WM + laneRow * TM;
    const int bFrag = warpCol * WN + laneCol * TN;

    // Copy assignment, fixed for the whole k loop. A: k fastest across lanes (each warp reads
    // whole 32-byte row segments), 4-byte copies written transposed; PAD = 4 shifts each k-row by
    // 4 banks, so a warp's 8 k x 4 rows hit 32 different banks (BK = 8; 2-way at BK = 16).
    // B: 16-byte chunks along n (4 single floats when N % 4 != 0: rows unaligned).
    const int aK = tid % BK, aR = tid / BK;                 // + i * A_ROW_STEP rows
    const int bR = tid / (BN / 4), bC = (tid % (BN / 4)) * 4;  // + i * B_ROW_STEP rows
    const float* aSrc = A + (cRow + aR) * K + aK;           // only dereferenced when in range
    const float* bSrc = B + bR * N + cCol + bC;
    const bool vecN = (N % 4) == 0;                         // grid-uniform
    // Block-uniform: every row of A and column of B this block copies is inside the matrices
    // and B's rows are 16B-aligned, so full-K tiles need no predicates at all.
    const bool fullBlock = vecN && (cRow + BM <= M) && (cCol + BN <= N);

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j)
            acc[i][j] = 0.0f;
    float fragA[2][WMITER * TM];
    float fragB[2][WNITER * TN];

    const int numTiles = (K + BK - 1) / BK;

    // Issue the copies of tile `t` into stage `s`; out-of-range elements are zero-filled.
    auto issueTile = [&](int t, int s) {
        const int k0 = t * BK;
        float* as = &As[s][aK * AS_LD + aR];
        float* bs = &Bs[s][bR * BN + bC];
        if (fullBlock && k0 + BK <= K) {        // fast path: the interior, 4096^3 is all this
            const float* a = aSrc + k0;
            const float* b = bSrc + k0 * N;
#pragma unroll
            for (int i = 0; i < A_COPIES; ++i)
                cp_async4(as + i * A_ROW_STEP, a + i * A_ROW_STEP * K);
#pragma unroll
            for (int i = 0; i < B_COPIES; ++i)
                cp_async16(bs + i * B_ROW_STEP * BN, b + i * B_ROW_STEP * N);
            return;
        }
#pragma unroll
        for (int i = 0; i < A_COPIES; ++i) {    // edge path: zero-fill what lies outside
            const int r = aR + i * A_ROW_STEP;
            const bool ok = (cRow + r < M) && (k0 + aK < K);
            cp_async4_zfill(as + i * A_ROW_STEP, ok ? A + (cRow + r) * K + k0 + aK : A, ok);
        }
#pragma unroll
        for (int i = 0; i < B_COPIES; ++i) {
            const int gk = k0 + bR + i * B_ROW_STEP, gn = cCol + bC;
            float* dst = bs + i * B_ROW_STEP * BN;
            if (vecN) {                         // N % 4 == 0: the 16 bytes are all in or all out
                const bool ok = (gk < K) && (gn < N);
                cp_async16_zfill(dst, ok ? B + gk * N + gn : B, ok);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const bool ok = (gk < K) && (gn + q < N);
                    cp_async4_zfill(dst + q, ok ? B + gk * N + gn + q : B, ok);
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
            // Fetch the fragments for step k+1 while step k's FMAs run.
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

    // Epilogue: float4 stores when the block tile is inside C and rows are 16B-aligned,
    // guarded scalar stores otherwise (edge blocks, N % 4 != 0).
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = cRow + aFrag + wm * WSUBM + i;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const int col = cCol + bFrag + wn * WSUBN + j;
                    const float* a = &acc[wm * TM + i][wn * TN + j];
                    float* c = C + row * N + col;
                    if (fullBlock) {
                        *reinterpret_cast<float4*>(c) = make_float4(a[0], a[1], a[2], a[3]);
                    } else if (row < M) {
#pragma unroll
                        for (int q = 0; q < 4; ++q)
                            if (col + q < N) c[q] = a[q];
                    }
                }
        }
}
