// matmul / interleaved
// multistage rebuilt in CUTLASS's SIMT order (the 128x256x8 x5 stages kernel, 0.98x cuBLAS): a
// warp's lanes form a LANES_M x LANES_N = 4 x 8 grid, row-interleaved by INTERLEAVE = 2, and each
// lane owns MITER x NITER = 4 x 2 sub-tiles of TM x TN = 4 x 4 (16 x 8 accumulators; warptile: 8
// lanes x 4, 8 x 16). The outer product runs in serpentine order, so every FFMA shares one operand
// with the one before it (the operand reuse cache serves it: fewer register-file reads, fewer
// register-bank conflicts). The K remainder is the FIRST k tile, so every tile of the main loop is
// whole: one copy path with per-thread zero-fill sizes fixed before the loop (warptile branches
// between an interior and an edge path every tile); B's 16-byte copies need N % 4 == 0, else a
// 4-byte instantiation of the same body runs. STAGES tiles resident in dynamic shared memory.
// Expected limiter: FFMA issue, then the one barrier per BK tile; fewer dispatch stalls than warptile.
// Measured on an H100 (4096^3): 3.030 ms against warptile's 2.917 ms. The register-bank model that
// predicted it (benchmarks/sass_bank_conflicts.py: fewer register reads and same-bank pairs than
// warptile) does not explain Hopper's dispatch stalls: they rose to 11.6 % (warptile 9.2 %, CUTLASS
// 6.0 %). Kept as a measured negative result of the ladder; docs/PERFORMANCE.md has the view.

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
#ifndef LANES_M
#define LANES_M 4      // lane rows of a warp (LANES_M * LANES_N == 32)
#endif
#ifndef INTERLEAVE
#define INTERLEAVE 2   // lane rows interleaved in pairs (CUTLASS's RowMajorInterleaved<2>)
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#ifndef STAGES
#define STAGES 5       // shared-memory pipeline depth (tiles resident at once)
#endif
#ifndef PAD
#define PAD 4          // floats of padding per k-row of the transposed A tile (keeps 16B rows)
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 1    // blocks per SM promised to the register allocator (__launch_bounds__)
#endif

#define NUM_WARPS (NUM_THREADS / 32)
#define LANES_N (32 / LANES_M)
#define MITER (WM / (LANES_M * TM))                    // sub-tiles per lane along M
#define NITER (WN / (LANES_N * TN))                    // sub-tiles per lane along N
#define FM (MITER * TM)                                // accumulator rows per thread
#define FN (NITER * TN)                                // accumulator cols per thread
#define AS_LD (BM + PAD)                               // leading dimension of As[k][m]
#define A_COPIES ((BM * BK) / NUM_THREADS)             // 4-byte copies of A per thread per tile
#define B_COPIES ((BK * BN / 4) / NUM_THREADS)         // 16-byte chunks of B per thread per tile
#define A_ROW_STEP (NUM_THREADS / BK)                  // A rows between a thread's copies
#define B_ROW_STEP (NUM_THREADS / (BN / 4))            // B rows between a thread's copies
#define SMEM_BYTES (STAGES * BK * (AS_LD + BN) * 4)  // = the manifest's dynamic_smem
#define MAX_SMEM_OPTIN (227 * 1024)                   // Hopper's per-block opt-in limit

static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "NUM_THREADS: a multiple of 32, at most 1024");
static_assert(BM % WM == 0 && BN % WN == 0, "the block tile must be a whole number of warp tiles");
static_assert((BM / WM) * (BN / WN) == NUM_WARPS, "one warp tile per warp: (BM/WM)*(BN/WN) == NUM_THREADS/32");
static_assert(LANES_M >= 1 && 32 % LANES_M == 0, "LANES_M must divide 32");
static_assert(INTERLEAVE >= 1 && LANES_M % INTERLEAVE == 0, "INTERLEAVE must divide LANES_M");
static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN must be multiples of 4 (LDS.128 / float4 stores)");
static_assert(WM % (LANES_M * TM) == 0 && WN % (LANES_N * TN) == 0,
              "a warp tile must be a whole number of lane-grid sub-tiles: WM % (LANES_M*TM), WN % (LANES_N*TN)");
static_assert(BK % 4 == 0 && PAD % 4 == 0, "BK and PAD must be multiples of 4 (16-byte copies and rows)");
static_assert((BM * BK) % NUM_THREADS == 0 && NUM_THREADS % BK == 0, "A tile must split evenly over the threads");
static_assert((BK * BN / 4) % NUM_THREADS == 0 && B_COPIES >= 1 && NUM_THREADS % (BN / 4) == 0,
              "B tile must split evenly into float4s over the threads, whole rows per pass");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(SMEM_BYTES <= MAX_SMEM_OPTIN, "STAGES tiles of A and B must fit in 227 KB of dynamic shared memory (Hopper's opt-in limit)");

// cp.async (sm_80+) with a source size: copy `bytes` (the full size or 0) and zero-fill the rest,
// so an element outside the matrix lands in shared memory as 0.0f (src must still be valid).
static __device__ __forceinline__ unsigned smem_addr(const float* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
static __device__ __forceinline__ void cp_async4(float* dst, const float* src, int bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}
static __device__ __forceinline__ void cp_async16(float* dst, const float* src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
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

// The whole GEMM for one block. VEC_B: B's rows are 16-byte aligned (N % 4 == 0), so B moves in
// 16-byte chunks; otherwise the same chunks move as four 4-byte copies.
template <bool VEC_B>
static __device__ __forceinline__ void gemm_block(const float* __restrict__ A, const float* __restrict__ B,
                                                  float* __restrict__ C, int M, int N, int K, float* smem)
{
    float(*As)[BK * AS_LD] = reinterpret_cast<float(*)[BK * AS_LD]>(smem);   // transposed + padded: [k][m]
    float(*Bs)[BK * BN] = reinterpret_cast<float(*)[BK * BN]>(smem + STAGES * BK * AS_LD);  // [k][n]

    const int tid = threadIdx.x;
    const int warpIdx = tid / 32;
    const int lane = tid % 32;
    const int warpRow = warpIdx / (BN / WN);
    const int warpCol = warpIdx % (BN / WN);
    // Row-interleaved lane grid: lanes 2i, 2i+1 are vertical neighbours (INTERLEAVE = 2).
    const int laneRow = (lane / (INTERLEAVE * LANES_N)) * INTERLEAVE + lane % INTERLEAVE;
    const int laneCol = (lane % (INTERLEAVE * LANES_N)) / INTERLEAVE;
    const int cRow = blockIdx.y * BM;
    const int cCol = blockIdx.x * BN;

    // A sub-tile's fragment: LANES_M (LANES_N) lanes read adjacent groups of TM (TN) floats, the
    // others the same addresses (broadcast), so each LDS.128 is one contiguous run: no conflicts.
    const int aFrag = warpRow * WM + laneRow * TM;     // + mi * LANES_M * TM
    const int bFrag = warpCol * WN + laneCol * TN;     // + ni * LANES_N * TN

    // Copy assignment, as in warptile. A: k fastest across lanes, 4-byte copies written transposed
    // (PAD shifts each k-row by 4 banks). B: 16-byte chunks along n.
    const int aK = tid % BK, aR = tid / BK;                    // + i * A_ROW_STEP rows
    const int bR = tid / (BN / 4), bC = (tid % (BN / 4)) * 4;  // + i * B_ROW_STEP rows

    // The K remainder goes first: tile 0 spans k in [kFirst, kFirst + BK) with kFirst <= 0 (its
    // k < 0 part zero-filled), so tiles 1.. lie wholly inside K and need only the M/N predicates,
    // which are fixed for the whole loop: copy sizes and clamped (always valid) source offsets.
    const int numTiles = (K + BK - 1) / BK;
    const int kFirst = (K % BK == 0) ? 0 : K % BK - BK;
    int aOff[A_COPIES], aBytes[A_COPIES];
#pragma unroll
    for (int i = 0; i < A_COPIES; ++i) {
        const int row = cRow + aR + i * A_ROW_STEP;
        aOff[i] = min(row, M - 1) * K + aK;            // + k0 (the tile's first k)
        aBytes[i] = row < M ? 4 : 0;
    }
    const int bCol = min(cCol + bC, VEC_B ? N - 4 : N - 1);    // clamped: always a valid column
    int bBytes[VEC_B ? 1 : 4];
#pragma unroll
    for (int q = 0; q < (VEC_B ? 1 : 4); ++q)
        bBytes[q] = (cCol + bC + q < N) ? (VEC_B ? 16 : 4) : 0;

    float acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
            acc[i][j] = 0.0f;
    float fragA[2][FM];
    float fragB[2][FN];

    // Copies of tile t into stage s. first: tile 0, whose k < 0 part is zero-filled.
    auto issueTile = [&](int t, int s, bool first) {
        const int k0 = kFirst + t * BK;
        float* as = &As[s][aK * AS_LD + aR];
        float* bs = &Bs[s][bR * BN + bC];
#pragma unroll
        for (int i = 0; i < A_COPIES; ++i) {
            const bool ok = !first || k0 + aK >= 0;
            cp_async4(as + i * A_ROW_STEP, A + aOff[i] + (ok ? k0 : -aK), ok ? aBytes[i] : 0);
        }
#pragma unroll
        for (int i = 0; i < B_COPIES; ++i) {
            const int gk = k0 + bR + i * B_ROW_STEP;
            const bool ok = !first || gk >= 0;
            const float* src = B + (ok ? gk : 0) * N;
            float* dst = bs + i * B_ROW_STEP * BN;
            if (VEC_B) {
                cp_async16(dst, src + bCol, ok ? bBytes[0] : 0);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    cp_async4(dst + q, src + min(bCol + q, N - 1), ok ? bBytes[q] : 0);
            }
        }
    };
    // Fragments of k-row k of stage s -> fragA[f], fragB[f] (LDS.128 each).
    auto loadFrags = [&](int s, int k, int f) {
#pragma unroll
        for (int mi = 0; mi < MITER; ++mi)
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&As[s][k * AS_LD + aFrag + mi * LANES_M * TM + i]);
                fragA[f][mi * TM + i + 0] = v.x; fragA[f][mi * TM + i + 1] = v.y;
                fragA[f][mi * TM + i + 2] = v.z; fragA[f][mi * TM + i + 3] = v.w;
            }
#pragma unroll
        for (int ni = 0; ni < NITER; ++ni)
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[s][k * BN + bFrag + ni * LANES_N * TN + j]);
                fragB[f][ni * TN + j + 0] = v.x; fragB[f][ni * TN + j + 1] = v.y;
                fragB[f][ni * TN + j + 2] = v.z; fragB[f][ni * TN + j + 3] = v.w;
            }
    };

    // Prologue: tiles 0 .. STAGES-2 in flight (one commit group each, empty past the end).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < numTiles) issueTile(s, s, s == 0);
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
        if (t + STAGES - 1 < numTiles) issueTile(t + STAGES - 1, sWrite, false);
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
            // Serpentine outer product: column j walks the rows down, column j+1 back up, so
            // consecutive FFMAs share a B register and, at each turn, an A register (reuse cache,
            // not the register file). Row-major serpentine measured worse in SASS (more conflicts).
#pragma unroll
            for (int j = 0; j < FN; ++j)
#pragma unroll
                for (int ii = 0; ii < FM; ++ii) {
                    const int i = (j % 2 == 0) ? ii : FM - 1 - ii;
                    acc[i][j] += fragA[k & 1][i] * fragB[k & 1][j];
                }
        }
        sWrite = sRead;
        sRead = sNext;
    }

    // Epilogue: float4 stores when the block tile is inside C and rows are 16B-aligned,
    // guarded scalar stores otherwise (edge blocks, N % 4 != 0).
    const bool fullBlock = VEC_B && (cRow + BM <= M) && (cCol + BN <= N);
#pragma unroll
    for (int mi = 0; mi < MITER; ++mi)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = cRow + aFrag + mi * LANES_M * TM + i;
#pragma unroll
            for (int ni = 0; ni < NITER; ++ni)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const int col = cCol + bFrag + ni * LANES_N * TN + j;
                    const float* a = &acc[mi * TM + i][ni * TN + j];
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

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
matmul_interleaved(const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C, int M, int N, int K)
{
    // Dynamic shared memory: STAGES A tiles, then STAGES B tiles (the launch passes SMEM_BYTES).
    extern __shared__ __align__(16) float smem[];
    if (N % 4 == 0)                             // grid-uniform: one body per launch
        gemm_block<true>(A, B, C, M, N, K, smem);
    else
        gemm_block<false>(A, B, C, M, N, K, smem);
}
