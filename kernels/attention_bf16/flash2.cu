// attention_bf16 / flash2
// FlashAttention-2 on the tensor cores (mma.sync m16n8k16 BF16 -> FP32). A block of NUM_WARPS
// warps owns BR = 16·MT·NUM_WARPS query rows of one (b, h): each warp MT m16 row tiles (32 rows by
// default), so every K and V fragment a warp reads from shared memory (ldmatrix) feeds MT mma's,
// and each K/V tile fetched from L2 serves BR queries. Q fragments stay in registers when they
// fit (D = 64), else are re-read from shared memory each k-step. KV tiles of BC keys are
// double-buffered in shared memory by cp.async (tile t+1 lands while tile t is computed), rows
// padded by one 16-byte chunk (row stride 2·D + 16 bytes) so every ldmatrix phase (8 rows x 16
// bytes) hits 32 distinct banks and every fragment address is one base register plus an
// immediate (no per-k-step swizzle arithmetic, no address registers held across the loop).
// Per tile: S = Q Kᵀ in FP32 registers; online softmax per row in registers (row max reduced
// over the 4 lanes of a quad by shuffles, ex2.approx with D^-1/2·log2 e folded into one FFMA,
// l kept per lane and reduced once at the end); P rounded to BF16 as it is made and used
// directly as the A fragment of the P·V mma (the m16n8k16 accumulator layout of two adjacent
// n-tiles is the A layout of one k-step); O and l rescaled by exp2(m_old - m_new) only when
// some row of the warp raised its maximum (a warp-uniform branch); O accumulated in FP32; O / l
// staged through shared memory and written as BF16 with 16-byte stores. Causal: KV tiles wholly
// above the diagonal are never visited, a warp skips the tiles above its own rows, only tiles
// crossing the warp's diagonal (or the ragged tail) are masked. Blocks are handed out in groups
// of GROUP_HEADS heads, query block by query block, the heaviest (causal: last) first, so the
// heads in flight share K/V in L2 and the grid's tail is made of the light blocks.
// Expected limiter: tensor-core issue (HMMA), with the ldmatrix stream from shared memory
// (Q, K and V fragments) and the softmax's exp2/FFMA/shuffles between the two GEMMs beside it.
#include <cuda_bf16.h>

#ifndef NUM_WARPS
#define NUM_WARPS 4        // warps per block
#endif
#ifndef MT
#define MT 2               // m16 row tiles per warp: 16·MT query rows each
#endif
#ifndef BC
#define BC 64              // keys per KV tile
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 2        // blocks per SM promised to the register allocator (__launch_bounds__)
#endif
#ifndef GROUP_HEADS
#define GROUP_HEADS 8      // (b, h) heads whose query blocks are interleaved in launch order
#endif

#define NUM_THREADS (NUM_WARPS * 32)
#define BR (16 * MT * NUM_WARPS)                                // query rows per block
#define ROW_BYTES(HD) ((HD) * 2 + 16)                           // a row padded by one 16-byte chunk
#define SMEM_BYTES_D(HD) ((BR + 4 * BC) * ROW_BYTES(HD))        // Q + 2 stages of K + 2 of V
#define SMEM_BYTES ((BR + 4 * BC) * (128 * 2 + 16))             // = SMEM_BYTES_D(128): the manifest's dynamic_smem
#define MAX_SMEM_OPTIN (227 * 1024)                             // Hopper's per-block opt-in limit

static_assert(NUM_WARPS >= 1 && NUM_WARPS <= 8, "NUM_WARPS: 1..8");
static_assert(MT >= 1 && MT <= 2, "MT: 1 or 2 row tiles of 16 per warp");
static_assert(BC % 16 == 0 && BC >= 16 && BC <= 128, "BC: a multiple of 16 (the P·V k-step), at most 128");
static_assert(GROUP_HEADS >= 1, "GROUP_HEADS: at least one head per launch group");
static_assert(SMEM_BYTES_D(128) == SMEM_BYTES && SMEM_BYTES <= MAX_SMEM_OPTIN, "Q + 2 K + 2 V tiles at D = 128 must fit in 227 KB");

#define NEG_INF (__int_as_float(0xff800000))

static __device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16-byte cp.async that writes zeros when !ok (src must still be a valid address).
static __device__ __forceinline__ void cp_async16_zfill(unsigned dst, const void* src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0));
}
static __device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
static __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
static __device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
static __device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
// D = A·B + D, m16n8k16, A row-major BF16 (4 regs), B column-major BF16 (2 regs), D FP32 (4 regs).
static __device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
static __device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);   // .x (low half) = lo: the smaller column
    return *reinterpret_cast<unsigned*>(&v);
}
// threadIdx.x read afresh (volatile: not hoisted out of the KV loop), so that values derived from it
// inside the loop are recomputed per tile instead of held in registers across it.
static __device__ __forceinline__ int tid_now()
{
    int t;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
    return t;
}
// 2^x on the MUFU (one instruction; -inf -> +0).
static __device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// Byte offset of 16-byte chunk c of row r in a [rows][HD] BF16 tile of padded rows.
template <int HD>
static __device__ __forceinline__ unsigned soff(int r, int c)
{
    return (unsigned)(r * ROW_BYTES(HD) + c * 16);
}

static __device__ __forceinline__ void cp_async16(unsigned dst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

// cp.async a ROWS x HD tile (src: its first row in a [S][HD] matrix) into swizzled shared memory;
// rows at or past rowsLeft are zero-filled. Thread i copies chunk i % CPR of rows i / CPR + k·RPI:
// one pointer and one shared address per thread, the k's as immediate offsets; only a ragged
// tile pays for the predicates.
template <int HD, int ROWS>
static __device__ __forceinline__ void load_tile(unsigned dst, const __nv_bfloat16* __restrict__ src, int rowsLeft)
{
    constexpr int CPR = HD / 8;                        // 16-byte chunks per row
    constexpr int RPI = NUM_THREADS / CPR;             // rows per pass of the block
    static_assert(NUM_THREADS % CPR == 0 && ROWS % RPI == 0, "a tile must split evenly into 16-byte chunks over the threads");
    const int r0 = threadIdx.x / CPR, c = threadIdx.x % CPR;
    const __nv_bfloat16* p = src + r0 * HD + c * 8;
    if (rowsLeft >= ROWS) {
#pragma unroll
        for (int k = 0; k < ROWS / RPI; ++k) cp_async16(dst + soff<HD>(r0 + k * RPI, c), p + k * RPI * HD);
    } else {
#pragma unroll
        for (int k = 0; k < ROWS / RPI; ++k) {
            const bool ok = r0 + k * RPI < rowsLeft;
            cp_async16_zfill(dst + soff<HD>(r0 + k * RPI, c), ok ? p + k * RPI * HD : src, ok);
        }
    }
}

template <int HD>
static __device__ __forceinline__ void flash2_body(const __nv_bfloat16* __restrict__ Q,
                                                   const __nv_bfloat16* __restrict__ K,
                                                   const __nv_bfloat16* __restrict__ V,
                                                   __nv_bfloat16* __restrict__ O, int S, int causal)
{
    static_assert(HD == 64 || HD == 128, "head dims 64 and 128 (the swizzle needs at least 8 chunks per row)");
    constexpr int KT = HD / 16;     // k-steps of Q·Kᵀ
    constexpr int NT = BC / 8;      // n-tiles of S (8 keys each)
    constexpr int OT = HD / 8;      // n-tiles of O (8 dims each)
    constexpr int RB = ROW_BYTES(HD);
    constexpr int TILE_BYTES = BC * RB;
    constexpr int WR = 16 * MT;     // query rows per warp
    constexpr bool QREG = MT * KT <= 8;   // Q fragments held in registers (at most 32 of them)

    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned sQ = smem_u32(smem);
    const unsigned sK = sQ + BR * RB;                   // 2 stages
    const unsigned sV = sK + 2 * TILE_BYTES;            // 2 stages

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int numQB = (S + BR - 1) / BR;                // = gridDim.x
    // Launch order -> (head, query block): groups of GROUP_HEADS heads, within a group query block
    // by query block (heaviest first when causal), the group's heads side by side.
    const int BH = (int)gridDim.y;
    const int lin = (int)blockIdx.x + (int)blockIdx.y * numQB;
    const int perGroup = GROUP_HEADS * numQB;
    const int grp = lin / perGroup;
    const int within = lin - grp * perGroup;
    const int nh = min(GROUP_HEADS, BH - grp * GROUP_HEADS);
    const int qi = within / nh;
    const int bh = grp * GROUP_HEADS + (within - qi * nh);
    const int qb = causal ? numQB - 1 - qi : qi;
    const int q0 = qb * BR;
    const long long base = (long long)bh * S * HD;
    const __nv_bfloat16* Qg = Q + base;
    const __nv_bfloat16* Kg = K + base;
    const __nv_bfloat16* Vg = V + base;

    const int kvEnd = causal ? min(S, q0 + BR) : S;
    const int numT = (kvEnd + BC - 1) / BC;

    load_tile<HD, BR>(sQ, Qg + (long long)q0 * HD, S - q0);
    load_tile<HD, BC>(sK, Kg, S);
    load_tile<HD, BC>(sV, Vg, S);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    // Q A-fragments, k-step kk of row tile mt: matrices (rows 0-7, cols 0-7), (rows 8-15, 0-7),
    // (0-7, 8-15), (8-15, 8-15) of the 16 x 16 block; lane l addresses row l % 16, chunk 2kk + l / 16.
    // Every fragment address below is one per-lane base register plus an immediate.
    const unsigned qAddr = sQ + soff<HD>(warp * WR + (lane & 15), lane >> 4);
    unsigned qf[QREG ? MT : 1][QREG ? KT : 1][4];
    if constexpr (QREG) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int kk = 0; kk < KT; ++kk)
                ldmatrix_x4(qf[mt][kk], qAddr + mt * 16 * RB + kk * 32);
    }

    float o[MT][OT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < OT; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.f;
    float m[MT][2], l[MT][2];          // running max (raw score units) and this lane's part of the sum
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) m[mt][0] = m[mt][1] = NEG_INF, l[mt][0] = l[mt][1] = 0.f;
    constexpr float sl2 = HD == 64 ? 0.18033688011112042f : 0.12751743082459868f;   // D^-1/2 · log2 e

    // Per-lane ldmatrix row/chunk pieces. K (non-trans, B of Q·Kᵀ): matrices (keys 0-7, chunk 2kk),
    // (keys 0-7, 2kk+1), (keys 8-15, 2kk), (keys 8-15, 2kk+1) -> b0,b1 of n-tile 2np, b0,b1 of 2np+1.
    // V (trans, B of P·V): matrices (keys 0-7, chunk 2dp), (keys 8-15, 2dp), (keys 0-7, 2dp+1),
    // (keys 8-15, 2dp+1) -> b0,b1 of dim tile 2dp, b0,b1 of 2dp+1.
    // (The per-lane pieces below are derived again inside the loop from tid_now(): held across
    // the loop they would not fit beside the 128 O accumulators at D = 128.)

#pragma unroll 1
    for (int t = 0; t < numT; ++t) {
        const int stage = t & 1;
        if (t + 1 < numT) {             // prefetch tile t+1 into the other stage (freed by the barrier below)
            const int kvNext = (t + 1) * BC;
            load_tile<HD, BC>(sK + (stage ^ 1) * TILE_BYTES, Kg + kvNext * HD, S - kvNext);
            load_tile<HD, BC>(sV + (stage ^ 1) * TILE_BYTES, Vg + kvNext * HD, S - kvNext);
        }
        cp_async_commit();
        cp_async_wait<1>();             // tile t has landed (only tile t+1 may be in flight)
        __syncthreads();
        const int kv0 = t * BC;
        const int tidT = tid_now(), laneT = tidT % 32;
        const int wRowT = q0 + (tidT / 32) * WR;       // = wRow0
        // The warp computes tiles whose first key is before its own end (causal: its last row + 1;
        // rows past S, in a ragged last block, need nothing).
        const int warpKvEnd = wRowT >= S ? 0 : causal ? min(S, wRowT + WR) : S;
        if (kv0 < warpKvEnd) {
            const unsigned kBase = sK + stage * TILE_BYTES + soff<HD>((laneT & 7) + ((laneT >> 4) << 3), (laneT >> 3) & 1);
            const unsigned vBase = sV + stage * TILE_BYTES + soff<HD>(laneT & 15, laneT >> 4);

            // S = Q Kᵀ (raw scores, FP32)
            float s[MT][NT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int n = 0; n < NT; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < KT; ++kk) {
                unsigned qa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    if constexpr (QREG) {
#pragma unroll
                        for (int e = 0; e < 4; ++e) qa[mt][e] = qf[mt][kk][e];
                    } else {
                        ldmatrix_x4(qa[mt], qAddr + mt * 16 * RB + kk * 32);
                    }
                }
#pragma unroll
                for (int np = 0; np < NT / 2; ++np) {
                    unsigned b[4];
                    ldmatrix_x4(b, kBase + np * 16 * RB + kk * 32);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma_bf16(s[mt][2 * np], qa[mt], b[0], b[1]);
                        mma_bf16(s[mt][2 * np + 1], qa[mt], b[2], b[3]);
                    }
                }
            }

            // Mask only the tiles that cross the warp's diagonal or the end of the sequence.
            if (kv0 + BC > (causal ? min(S, wRowT + 1) : S)) {
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int r = 0; r < 2; ++r) {
                        const int i = wRowT + (laneT >> 2) + mt * 16 + r * 8;    // this lane's query row
                        const int jMax = (causal ? min(i, S - 1) : S - 1) - kv0 - 2 * (laneT & 3);  // last key kept, from c0's key
#pragma unroll
                        for (int n = 0; n < NT; ++n)
#pragma unroll
                            for (int e = 0; e < 2; ++e)
                                if (n * 8 + e > jMax) s[mt][n][2 * r + e] = NEG_INF;
                    }
            }

            // Online softmax, per row tile rows g (r = 0: c0,c1) and g + 8 (r = 1: c2,c3). The new row
            // maxima first; O and l are rescaled only when some row of the warp raised its maximum
            // (a warp-uniform branch: past the first tiles the maxima seldom move).
            float mNew[MT][2];
            bool raised = false;
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    float mx = m[mt][r];
#pragma unroll
                    for (int n = 0; n < NT; ++n) mx = fmaxf(mx, fmaxf(s[mt][n][2 * r], s[mt][n][2 * r + 1]));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                    raised |= mx != m[mt][r];
                    mNew[mt][r] = mx;
                }
            if (__any_sync(0xffffffffu, raised)) {
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int r = 0; r < 2; ++r) {
                        // exp2((m_old - m_new)·scale): 1 when unchanged, 0 when m_old = -inf (first tile);
                        // a row still fully masked (m_new = -inf) keeps alpha = 1 and its zeros.
                        const float alpha = mNew[mt][r] == m[mt][r] ? 1.f : ex2((m[mt][r] - mNew[mt][r]) * sl2);
                        l[mt][r] *= alpha;
#pragma unroll
                        for (int n = 0; n < OT; ++n) {
                            o[mt][n][2 * r] *= alpha;
                            o[mt][n][2 * r + 1] *= alpha;
                        }
                    }
            }
            unsigned pk[MT][NT][2];     // P in BF16 pairs, the scores' registers freed as they go
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    m[mt][r] = mNew[mt][r];
                    const float mScaled = (mNew[mt][r] == NEG_INF) ? 0.f : mNew[mt][r] * sl2;  // a fully masked row stays 0
#pragma unroll
                    for (int n = 0; n < NT; ++n) {
                        const float p0 = ex2(fmaf(s[mt][n][2 * r], sl2, -mScaled));
                        const float p1 = ex2(fmaf(s[mt][n][2 * r + 1], sl2, -mScaled));
                        pk[mt][n][r] = pack_bf16x2(p0, p1);   // row g (+8 when r = 1), keys 2c, 2c+1
                        l[mt][r] += p0 + p1;
                    }
                }

            // O += P V: P's k-step kk is S's n-tiles 2kk, 2kk+1 (accumulator -> A-fragment identity).
#pragma unroll
            for (int kk = 0; kk < BC / 16; ++kk) {
                unsigned a[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    a[mt][0] = pk[mt][2 * kk][0];          // row g,     keys 2c..2c+1
                    a[mt][1] = pk[mt][2 * kk][1];          // row g + 8, keys 2c..2c+1
                    a[mt][2] = pk[mt][2 * kk + 1][0];      // row g,     keys 8+2c..
                    a[mt][3] = pk[mt][2 * kk + 1][1];      // row g + 8, keys 8+2c..
                }
#pragma unroll
                for (int dp = 0; dp < OT / 2; ++dp) {
                    unsigned b[4];
                    ldmatrix_x4_trans(b, vBase + kk * 16 * RB + dp * 32);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma_bf16(o[mt][2 * dp], a[mt], b[0], b[1]);
                        mma_bf16(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
                    }
                }
            }
        }
        __syncthreads();                // this stage may be overwritten by the next prefetch
    }

    // Epilogue: O / l (l reduced over the quad), staged in the warp's own rows of sQ.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 1);
            l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 2);
            l[mt][r] = (l[mt][r] > 0.f) ? 1.f / l[mt][r] : 0.f;
        }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        const int r0 = warp * WR + mt * 16 + (lane >> 2);
        const int colA = 2 * (lane & 3);
#pragma unroll
        for (int n = 0; n < OT; ++n) {
            const unsigned lo = pack_bf16x2(o[mt][n][0] * l[mt][0], o[mt][n][1] * l[mt][0]);
            const unsigned hi = pack_bf16x2(o[mt][n][2] * l[mt][1], o[mt][n][3] * l[mt][1]);
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sQ + soff<HD>(r0, n) + colA * 2), "r"(lo));
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sQ + soff<HD>(r0 + 8, n) + colA * 2), "r"(hi));
        }
    }
    __syncwarp();
    {
        constexpr int CPR = HD / 8;
        __nv_bfloat16* Og = O + base;
#pragma unroll
        for (int k = 0; k < (WR * CPR) / 32; ++k) {
            const int idx = lane + k * 32;
            const int r = warp * WR + idx / CPR, c = idx % CPR;
            uint4 v;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(sQ + soff<HD>(r, c)));
            if (q0 + r < S) *reinterpret_cast<uint4*>(Og + (long long)(q0 + r) * HD + c * 8) = v;
        }
    }
}

// grid = (ceil(S/BR), B*H) with BR = 16*MT*NUM_WARPS (= 128), block = (NUM_THREADS) (= 128),
// dynamic shared memory = SMEM_BYTES_D(64) = (BR + 4*BC)*(64*2 + 16) = 55296 bytes (defaults; > 48 KB: opt in).
extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
attn_flash2_d64(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O,
                int B, int H, int S, int D, int causal)
{
    if (D != 64) return;
    flash2_body<64>(Q, K, V, O, S, causal);
}

// grid = (ceil(S/BR), B*H), block = (NUM_THREADS),
// dynamic shared memory = SMEM_BYTES_D(128) = (BR + 4*BC)*(128*2 + 16) = 104448 bytes (defaults; > 48 KB: opt in).
extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
attention_bf16_flash2(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                 const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O,
                 int B, int H, int S, int D, int causal)
{
    if (D != 128) return;
    flash2_body<128>(Q, K, V, O, S, causal);
}
