// conv2d / winograd_pipeline.cuh: the Winograd F(2x2, 3x3) machinery that conv2d/winograd and
// fused/winograd share (see conv2d/winograd.cu's header for the method): the defines and their
// checks, the filter transform, and the main pipeline up to the output transform's row half
// (Z in shared memory), after which each kernel has its own epilogue. Included, not compiled alone.
#pragma once

#ifndef NUM_THREADS
#define NUM_THREADS 256
#endif
#ifndef BM
#define BM 32          // filters (output channels) per block
#endif
#ifndef BN
#define BN 32          // 2x2 output tiles (n, tile row, tile column) per block
#endif
#ifndef BK
#define BK 8           // channels c' = (c, 3x3 chunk) per pipeline step
#endif
#ifndef TM
#define TM 4           // filters per thread, per Winograd element
#endif
#ifndef TN
#define TN 4           // tiles per thread, per Winograd element
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 2    // blocks per SM promised to the register allocator (__launch_bounds__)
#endif
#ifndef FILTER_THREADS
#define FILTER_THREADS 256   // block of the filter-transform kernel
#endif

#define GROUP_THREADS (NUM_THREADS / 4)             // threads owning one row of the 4x4 Winograd tile
#define U_FLOATS (16 * BK * BM)                     // one stage of the transformed filter: [xi][c'][k]
#define V_FLOATS (16 * BK * BN)                     // one stage of the transformed input:  [xi][c'][tile]
#define Z_FLOATS (8 * BM * BN)                      // row-transformed sums exchanged in the epilogue
#define SMEM_FLOATS (2 * (U_FLOATS + V_FLOATS))     // two stages, reused for Z after the main loop
#define SMEM_BYTES (SMEM_FLOATS * 4)                // = the manifest's dynamic_smem
#define V_PAIRS ((BK * BN + NUM_THREADS - 1) / NUM_THREADS)   // input patches per thread per step (at most)
#define U_VECS ((U_FLOATS / 4) / NUM_THREADS)       // 16-byte copies of U per thread per step
#define OUT_PAIRS ((BM * BN) / NUM_THREADS)         // (filter, tile) outputs transformed per thread

static_assert(NUM_THREADS % 128 == 0 && NUM_THREADS <= 1024, "NUM_THREADS: a multiple of 128 (4 warp-aligned groups)");
static_assert((BM / TM) * (BN / TN) == GROUP_THREADS, "a group's threads must tile BM x BN exactly: (BM/TM)*(BN/TN) == NUM_THREADS/4");
static_assert(BM % TM == 0 && BN % TN == 0, "BM, BN must be multiples of TM, TN");
static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN must be multiples of 4 (LDS.128 / float4 stores)");
static_assert((U_FLOATS / 4) % NUM_THREADS == 0, "the U tile's 16-byte copies must split evenly over the threads");
static_assert((BM * BN) % NUM_THREADS == 0, "the BM x BN outputs must split evenly over the threads");
static_assert(Z_FLOATS <= SMEM_FLOATS, "the epilogue's exchange must fit in the pipeline's shared memory: BM*BN <= 4*BK*(BM+BN)");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory over the 227 KB an H100 block may have");

static __device__ __forceinline__ void cp_async16(float* dst, const float* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                 ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(dst))), "l"(src));
}
static __device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
static __device__ __forceinline__ void cp_async_wait_all()
{
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

// The padded extents both kernels agree on: C' = C * chunks rounded up to BK, K up to BM (the
// workspace's zero padding lets the main loop copy whole tiles without bounds checks).
static __device__ __forceinline__ int chunk_cols(int S) { return (S + 2) / 3; }
static __device__ __forceinline__ int chunks(int R, int S) { return ((R + 2) / 3) * chunk_cols(S); }
static __device__ __forceinline__ int padded_channels(int C, int R, int S) { return (C * chunks(R, S) + BK - 1) / BK * BK; }
static __device__ __forceinline__ int padded_filters(int K) { return (K + BM - 1) / BM * BM; }

// U[xi][c'][k] = (G g G^T)[xi / 4][xi % 4] of the 3x3 chunk g of w[k][c] (zero past R, S, K, C'),
// G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. One thread per (c', k), k fastest (coalesced stores).
static __device__ __forceinline__ void winograd_filter_transform(const float* __restrict__ w, float* __restrict__ u,
                                                                int C, int K, int R, int S)
{
    const int CS3 = chunk_cols(S), CH = chunks(R, S), CP = C * CH;
    const int CPP = padded_channels(C, R, S), KP = padded_filters(K);
    const int idx = blockIdx.x * FILTER_THREADS + threadIdx.x;
    if (idx >= CPP * KP) return;
    const int k = idx % KP, cp = idx / KP;

    float g[3][3];
#pragma unroll
    for (int a = 0; a < 3; ++a)
#pragma unroll
        for (int b = 0; b < 3; ++b)
            g[a][b] = 0.0f;
    if (k < K && cp < CP) {
        const int c = cp / CH, ch = cp - c * CH;
        const int r0 = 3 * (ch / CS3), s0 = 3 * (ch % CS3);
        const float* wk = w + (k * C + c) * R * S;
#pragma unroll
        for (int a = 0; a < 3; ++a)
#pragma unroll
            for (int b = 0; b < 3; ++b)
                if (r0 + a < R && s0 + b < S)
                    g[a][b] = wk[(r0 + a) * S + s0 + b];
    }
    float t[4][3];                          // G g
#pragma unroll
    for (int b = 0; b < 3; ++b) {
        t[0][b] = g[0][b];
        t[1][b] = 0.5f * (g[0][b] + g[1][b] + g[2][b]);
        t[2][b] = 0.5f * (g[0][b] - g[1][b] + g[2][b]);
        t[3][b] = g[2][b];
    }
    const int plane = CPP * KP;             // one Winograd element's [c'][k] matrix
    float* out = u + cp * KP + k;
#pragma unroll
    for (int a = 0; a < 4; ++a) {           // (G g) G^T, row a
        out[(4 * a + 0) * plane] = t[a][0];
        out[(4 * a + 1) * plane] = 0.5f * (t[a][0] + t[a][1] + t[a][2]);
        out[(4 * a + 2) * plane] = 0.5f * (t[a][0] - t[a][1] + t[a][2]);
        out[(4 * a + 3) * plane] = t[a][2];
    }
}

// Where a block's outputs are: the conv's extents and the block's first filter and tile.
struct WinogradBlock {
    int P, Q;       // conv output rows, columns
    int TQ, TPQ;    // 2x2 tiles per tile row, per image
    int T;          // tiles (GEMM columns) in all
    int k0, t0;     // this block's first filter and first tile
};

// The 16 batched GEMMs of a block and the output transform's row half: on return (after a
// barrier) Zs = smem holds Z[2g + b][k][tile] = sum_j M[g][j] A[j][b] for the block's BM x BN
// (filter, tile) pairs; the column half is the caller's epilogue. U: the transformed filter.
static __device__ __forceinline__ WinogradBlock winograd_row_half(const float* __restrict__ x, const float* __restrict__ U,
                                                                 float* smem, int N, int C, int H, int W, int K,
                                                                 int R, int S)
{
    float* Us = smem;                                // [2][16][BK][BM]
    float* Vs = smem + 2 * U_FLOATS;                 // [2][16][BK][BN]

    const int padH = (R - 1) / 2, padW = (S - 1) / 2;
    const int P = H + 2 * padH - R + 1, Q = W + 2 * padW - S + 1;   // = H, W for odd R, S
    const int TQ = (Q + 1) / 2, TPQ = ((P + 1) / 2) * TQ;            // 2x2 tiles per row, per image
    const int T = N * TPQ;                                           // GEMM columns: tiles
    const int CS3 = chunk_cols(S), CH = chunks(R, S), CP = C * CH;
    const int CPP = padded_channels(C, R, S), KP = padded_filters(K);
    const int HW = H * W;
    const int steps = CPP / BK;

    // Blocks sharing input tiles run next to each other: the filter block varies fastest.
    const int kBlocks = KP / BM;
    const int k0 = (blockIdx.x % kBlocks) * BM;
    const int t0 = (blockIdx.x / kBlocks) * BN;
    const int tid = threadIdx.x;

    // Input patches this thread gathers each step: channel row vk of the step, tile vt (none where
    // BK*BN < NUM_THREADS leaves it idle). A tile past the end gets a row origin of H, so every
    // tap fails the bounds check (reads nothing).
    int vk[V_PAIRS], vt[V_PAIRS], xImg[V_PAIRS], ih0[V_PAIRS], iw0[V_PAIRS];
    bool vOn[V_PAIRS];
#pragma unroll
    for (int v = 0; v < V_PAIRS; ++v) {
        const int pair = tid + v * NUM_THREADS;
        vOn[v] = pair < BK * BN;
        vt[v] = pair % BN;
        vk[v] = pair / BN;
        const int t = t0 + vt[v];
        if (t < T) {
            const int n = t / TPQ, rest = t - n * TPQ;
            const int tp = rest / TQ, tq = rest - tp * TQ;
            xImg[v] = n * C * HW;
            ih0[v] = 2 * tp - padH;
            iw0[v] = 2 * tq - padW;
        } else {
            xImg[v] = 0;
            ih0[v] = H;
            iw0[v] = 0;
        }
    }
    float d[V_PAIRS][4][4];   // the next step's raw patches, in flight while this step computes

    // Patch of channel c' = step*BK + vk: x[n][c][ih + i][iw + j], i, j < 4, for the chunk's
    // origin (ih, iw) = (2 tp - padH + 3 cr, 2 tq - padW + 3 cs); zero in the halo and past C'.
    auto loadPatches = [&](int step) {
#pragma unroll
        for (int v = 0; v < V_PAIRS; ++v) {
            if (!vOn[v]) continue;
            const int cp = step * BK + vk[v];
            int c = 0, ih = H, iw = 0;                   // past C': every tap fails the row check
            if (cp < CP) {
                c = cp / CH;
                const int ch = cp - c * CH;
                const int cr = ch / CS3;
                ih = ih0[v] + 3 * cr;
                iw = iw0[v] + 3 * (ch - cr * CS3);
            }
            const int off = xImg[v] + c * HW + ih * W + iw;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const bool rowOk = (unsigned)(ih + i) < (unsigned)H;
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const bool ok = rowOk && (unsigned)(iw + j) < (unsigned)W;
                    d[v][i][j] = ok ? __ldg(x + off + i * W + j) : 0.0f;
                }
            }
        }
    };
    // V = B^T d B, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], into Vs[stage][xi][vk][vt].
    auto storeV = [&](int stage) {
        float* vs = Vs + stage * V_FLOATS;
#pragma unroll
        for (int v = 0; v < V_PAIRS; ++v) {
            if (!vOn[v]) continue;
            float t[4][4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {        // B^T d: combine rows
                t[0][j] = d[v][0][j] - d[v][2][j];
                t[1][j] = d[v][1][j] + d[v][2][j];
                t[2][j] = d[v][2][j] - d[v][1][j];
                t[3][j] = d[v][1][j] - d[v][3][j];
            }
            float* dst = vs + vk[v] * BN + vt[v];
#pragma unroll
            for (int i = 0; i < 4; ++i) {        // (B^T d) B: combine columns
                dst[(4 * i + 0) * BK * BN] = t[i][0] - t[i][2];
                dst[(4 * i + 1) * BK * BN] = t[i][1] + t[i][2];
                dst[(4 * i + 2) * BK * BN] = t[i][2] - t[i][1];
                dst[(4 * i + 3) * BK * BN] = t[i][1] - t[i][3];
            }
        }
    };
    // U rows (xi, step*BK .. +BK) x filters k0 .. k0+BM of the padded workspace, 16 bytes a copy.
    auto issueU = [&](int step, int stage) {
        float* us = Us + stage * U_FLOATS;
#pragma unroll
        for (int i = 0; i < U_VECS; ++i) {
            const int idx = tid + i * NUM_THREADS;
            const int row = idx / (BM / 4), col = (idx % (BM / 4)) * 4;   // row = xi * BK + kk
            const int xi = row / BK, kk = row - xi * BK;
            cp_async16(us + row * BM + col, U + (xi * CPP + step * BK + kk) * KP + k0 + col);
        }
        cp_async_commit();
    };

    // Compute roles: group g owns Winograd elements 4g .. 4g+3 (row g of the tile) for TM filters
    // (tRow) x TN tiles (tCol). A warp's fragments are a few distinct float4s: broadcast LDS.128.
    const int g = tid / GROUP_THREADS;
    const int gt = tid % GROUP_THREADS;
    const int tRow = gt / (BN / TN), tCol = gt % (BN / TN);
    float acc[4][TM][TN];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int m = 0; m < TM; ++m)
#pragma unroll
            for (int n = 0; n < TN; ++n)
                acc[j][m][n] = 0.0f;

    issueU(0, 0);
    loadPatches(0);
    storeV(0);
    for (int step = 0; step < steps; ++step) {
        const int stage = step & 1;
        cp_async_wait_all();            // this thread's U copies of `step` have landed ...
        __syncthreads();                // ... everyone's, with every V store; the other stage is free
        const bool more = step + 1 < steps;
        if (more) {
            issueU(step + 1, stage ^ 1);
            loadPatches(step + 1);      // global loads in flight during the products below
        }
        const float* us = Us + stage * U_FLOATS + (4 * g) * BK * BM + tRow * TM;
        const float* vs = Vs + stage * V_FLOATS + (4 * g) * BK * BN + tCol * TN;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                float a[TM], b[TN];
#pragma unroll
                for (int m = 0; m < TM; m += 4) {
                    const float4 q = *reinterpret_cast<const float4*>(us + (j * BK + kk) * BM + m);
                    a[m] = q.x; a[m + 1] = q.y; a[m + 2] = q.z; a[m + 3] = q.w;
                }
#pragma unroll
                for (int n = 0; n < TN; n += 4) {
                    const float4 q = *reinterpret_cast<const float4*>(vs + (j * BK + kk) * BN + n);
                    b[n] = q.x; b[n + 1] = q.y; b[n + 2] = q.z; b[n + 3] = q.w;
                }
#pragma unroll
                for (int m = 0; m < TM; ++m)
#pragma unroll
                    for (int n = 0; n < TN; ++n)
                        acc[j][m][n] += a[m] * b[n];
            }
        if (more) storeV(stage ^ 1);    // the other stage: last read before this step's barrier
    }

    // Output transform Y = A^T M A, A^T = [1 1 1 0; 0 1 -1 -1]. Row half in registers:
    // Z[g][b] = sum_j M[g][j] A[j][b], into Zs[g][b][k][tile] (the pipeline's shared memory).
    __syncthreads();                    // every thread is done reading both stages
    float* Zs = smem;
#pragma unroll
    for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; n += 4) {
            float z0[4], z1[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                z0[e] = acc[0][m][n + e] + acc[1][m][n + e] + acc[2][m][n + e];
                z1[e] = acc[1][m][n + e] - acc[2][m][n + e] - acc[3][m][n + e];
            }
            const int at = (tRow * TM + m) * BN + tCol * TN + n;
            *reinterpret_cast<float4*>(Zs + (2 * g + 0) * BM * BN + at) = make_float4(z0[0], z0[1], z0[2], z0[3]);
            *reinterpret_cast<float4*>(Zs + (2 * g + 1) * BM * BN + at) = make_float4(z1[0], z1[1], z1[2], z1[3]);
        }
    __syncthreads();
    return WinogradBlock{P, Q, TQ, TPQ, T, k0, t0};
}
