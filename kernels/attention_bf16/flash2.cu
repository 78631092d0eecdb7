// attention_bf16 / flash2
// FlashAttention-2 on the tensor cores (mma.sync m16n8k16 BF16 -> FP32). A block of NUM_WARPS
// warps owns BR = 16·NUM_WARPS query rows of one (b, h), 16 per warp; the warp's Q fragments
// are loaded once (ldmatrix) and stay in registers. KV tiles of BC keys are double-buffered in
// shared memory by cp.async (tile t+1 lands while tile t is computed), rows XOR-swizzled in 16-byte
// chunks (chunk c of row r at c ^ (r & 7)) so every ldmatrix phase hits 32 distinct banks.
// Per tile: S = Q Kᵀ in FP32 registers; online softmax per row in registers (row max reduced
// over the 4 lanes of a quad by shuffles, exp2f with D^-1/2·log2 e folded into one FFMA, l kept
// per lane and reduced once at the end); P rounded to BF16 and used directly as the A fragment
// of the P·V mma (the m16n8k16 accumulator layout of two adjacent n-tiles is the A layout of
// one k-step); O rescaled by exp2(m_old - m_new) and accumulated in FP32; O / l staged through
// shared memory and written as BF16 with 16-byte stores. Causal: KV tiles wholly above the
// diagonal are never visited, only tiles crossing the diagonal (or the ragged tail) are masked,
// and blockIdx.x walks the query blocks of a head from the last (heaviest) to the first.
// Expected limiter: tensor-core issue (HMMA) and the shared-memory bandwidth of the ldmatrix
// stream (each warp re-reads the whole K and V tile for its 16 rows), then the softmax's
// exp2/FFMA/shuffles between the two GEMMs.
#include <cuda_bf16.h>

#ifndef NUM_WARPS
#define NUM_WARPS 4        // warps per block; 16 query rows each
#endif
#ifndef BC
#define BC 64              // keys per KV tile
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 2        // blocks per SM promised to the register allocator (__launch_bounds__)
#endif

#define NUM_THREADS (NUM_WARPS * 32)
#define BR (16 * NUM_WARPS)                                     // query rows per block
#define SMEM_ELEMS(HD) ((BR + 4 * BC) * (HD))                   // Q + 2 stages of K + 2 of V
#define SMEM_BYTES(HD) (SMEM_ELEMS(HD) * 2)                     // = the launch's dynamic smem
#define MAX_SMEM_OPTIN (227 * 1024)                             // Hopper's per-block opt-in limit

static_assert(NUM_WARPS >= 1 && NUM_WARPS <= 8, "NUM_WARPS: 1..8 (16 query rows per warp)");
static_assert(BC % 16 == 0 && BC >= 16 && BC <= 128, "BC: a multiple of 16 (the P·V k-step), at most 128");
static_assert(SMEM_BYTES(128) <= MAX_SMEM_OPTIN, "Q + 2 K + 2 V tiles at D = 128 must fit in 227 KB");

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

// Byte offset of 16-byte chunk c of row r in a [rows][HD] BF16 tile with the XOR swizzle.
template <int HD>
static __device__ __forceinline__ unsigned swz(int r, int c)
{
    return (unsigned)(r * HD * 2 + ((c ^ (r & 7)) << 4));
}

// cp.async a ROWS x HD tile (rows row0.. of a [S][HD] matrix) into swizzled shared memory;
// rows at or past S are zero-filled.
template <int HD, int ROWS>
static __device__ __forceinline__ void load_tile(unsigned dst, const __nv_bfloat16* __restrict__ src, int row0, int S)
{
    constexpr int CPR = HD / 8;                        // 16-byte chunks per row
    static_assert((ROWS * CPR) % NUM_THREADS == 0, "a tile must split evenly into 16-byte chunks over the threads");
#pragma unroll
    for (int k = 0; k < (ROWS * CPR) / NUM_THREADS; ++k) {
        const int idx = threadIdx.x + k * NUM_THREADS;
        const int r = idx / CPR, c = idx % CPR;
        const bool ok = row0 + r < S;
        const __nv_bfloat16* p = ok ? src + (long long)(row0 + r) * HD + c * 8 : src;
        cp_async16_zfill(dst + swz<HD>(r, c), p, ok);
    }
}

template <int HD>
static __device__ __forceinline__ void flash2_body(const __nv_bfloat16* __restrict__ Q,
                                                   const __nv_bfloat16* __restrict__ K,
                                                   const __nv_bfloat16* __restrict__ V,
                                                   __nv_bfloat16* __restrict__ O, int S, int causal)
{
    static_assert(HD % 64 == 0, "the swizzle needs at least 8 chunks (128 bytes) per row");
    constexpr int KT = HD / 16;     // k-steps of Q·Kᵀ
    constexpr int NT = BC / 8;      // n-tiles of S (8 keys each)
    constexpr int OT = HD / 8;      // n-tiles of O (8 dims each)
    constexpr int TILE_BYTES = BC * HD * 2;

    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned sQ = smem_u32(smem);
    const unsigned sK = sQ + BR * HD * 2;               // 2 stages
    const unsigned sV = sK + 2 * TILE_BYTES;            // 2 stages

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int numQB = (S + BR - 1) / BR;
    const int qb = causal ? numQB - 1 - (int)blockIdx.x : (int)blockIdx.x;   // heaviest first
    const int q0 = qb * BR;
    const long long base = (long long)blockIdx.y * S * HD;
    const __nv_bfloat16* Qg = Q + base;
    const __nv_bfloat16* Kg = K + base;
    const __nv_bfloat16* Vg = V + base;

    const int kvEnd = causal ? min(S, q0 + BR) : S;
    const int numT = (kvEnd + BC - 1) / BC;

    load_tile<HD, BR>(sQ, Qg, q0, S);
    load_tile<HD, BC>(sK, Kg, 0, S);
    load_tile<HD, BC>(sV, Vg, 0, S);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    // Q A-fragments, k-step kk: matrices (rows 0-7, cols 0-7), (rows 8-15, 0-7), (0-7, 8-15),
    // (8-15, 8-15) of the warp's 16 x 16 block; lane l addresses row l % 16, chunk 2kk + l / 16.
    unsigned qf[KT][4];
    {
        const int r = warp * 16 + (lane & 15);
#pragma unroll
        for (int kk = 0; kk < KT; ++kk) ldmatrix_x4(qf[kk], sQ + swz<HD>(r, 2 * kk + (lane >> 4)));
    }

    float o[OT][4];
#pragma unroll
    for (int n = 0; n < OT; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m[2] = {NEG_INF, NEG_INF};   // running max of rows g and g + 8 (raw score units)
    float l[2] = {0.f, 0.f};           // this lane's part of the running sums
    const float sl2 = 1.4426950408889634f / sqrtf((float)HD);    // D^-1/2 · log2 e

    // Per-lane ldmatrix row/chunk pieces. K (non-trans, B of Q·Kᵀ): matrices (keys 0-7, chunk 2kk),
    // (keys 0-7, 2kk+1), (keys 8-15, 2kk), (keys 8-15, 2kk+1) -> b0,b1 of n-tile 2np, b0,b1 of 2np+1.
    const int kRow = (lane & 7) + ((lane >> 4) << 3);
    const int kChunk = (lane >> 3) & 1;
    // V (trans, B of P·V): matrices (keys 0-7, chunk 2dp), (keys 8-15, 2dp), (keys 0-7, 2dp+1),
    // (keys 8-15, 2dp+1) -> b0,b1 of dim tile 2dp, b0,b1 of 2dp+1.
    const int vRow = lane & 15;
    const int vChunk = lane >> 4;
    const int rowA = q0 + warp * 16 + (lane >> 2);   // query row of c0,c1 (c2,c3: rowA + 8)
    const int colA = 2 * (lane & 3);                  // key column of c0 within an n-tile

#pragma unroll 1
    for (int t = 0; t < numT; ++t) {
        const int stage = t & 1;
        if (t + 1 < numT) {             // prefetch tile t+1 into the other stage (freed by the barrier below)
            load_tile<HD, BC>(sK + (stage ^ 1) * TILE_BYTES, Kg, (t + 1) * BC, S);
            load_tile<HD, BC>(sV + (stage ^ 1) * TILE_BYTES, Vg, (t + 1) * BC, S);
        }
        cp_async_commit();
        cp_async_wait<1>();             // tile t has landed (only tile t+1 may be in flight)
        __syncthreads();
        const unsigned kBase = sK + stage * TILE_BYTES;
        const unsigned vBase = sV + stage * TILE_BYTES;

        // S = Q Kᵀ (raw scores, FP32)
        float s[NT][4];
#pragma unroll
        for (int n = 0; n < NT; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < KT; ++kk) {
#pragma unroll
            for (int np = 0; np < NT / 2; ++np) {
                unsigned b[4];
                ldmatrix_x4(b, kBase + swz<HD>(np * 16 + kRow, 2 * kk + kChunk));
                mma_bf16(s[2 * np], qf[kk], b[0], b[1]);
                mma_bf16(s[2 * np + 1], qf[kk], b[2], b[3]);
            }
        }

        // Mask only the tiles that cross the diagonal or the end of the sequence.
        const int kv0 = t * BC;
        if (kv0 + BC > S || (causal && kv0 + BC - 1 > q0)) {
#pragma unroll
            for (int n = 0; n < NT; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int j = kv0 + n * 8 + colA + (e & 1);
                    const int i = rowA + (e >> 1) * 8;
                    if (j >= S || (causal && j > i)) s[n][e] = NEG_INF;
                }
        }

        // Online softmax, rows g (r = 0: c0,c1) and g + 8 (r = 1: c2,c3).
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float mx = m[r];
#pragma unroll
            for (int n = 0; n < NT; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float mScaled = (mx == NEG_INF) ? 0.f : mx * sl2;   // a fully masked row stays 0
            const float alpha = exp2f(m[r] * sl2 - mScaled);           // m = -inf (first tile): 0
            m[r] = mx;
            l[r] *= alpha;
#pragma unroll
            for (int n = 0; n < OT; ++n) {
                o[n][2 * r] *= alpha;
                o[n][2 * r + 1] *= alpha;
            }
#pragma unroll
            for (int n = 0; n < NT; ++n) {
                const float p0 = exp2f(fmaf(s[n][2 * r], sl2, -mScaled));
                const float p1 = exp2f(fmaf(s[n][2 * r + 1], sl2, -mScaled));
                s[n][2 * r] = p0;
                s[n][2 * r + 1] = p1;
                l[r] += p0 + p1;
            }
        }

        // O += P V: P's k-step kk is S's n-tiles 2kk, 2kk+1 (accumulator -> A-fragment identity).
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) {
            unsigned a[4];
            a[0] = pack_bf16x2(s[2 * kk][0], s[2 * kk][1]);          // row g,     keys 2c..2c+1
            a[1] = pack_bf16x2(s[2 * kk][2], s[2 * kk][3]);          // row g + 8, keys 2c..2c+1
            a[2] = pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);  // row g,     keys 8+2c..
            a[3] = pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);  // row g + 8, keys 8+2c..
#pragma unroll
            for (int dp = 0; dp < OT / 2; ++dp) {
                unsigned b[4];
                ldmatrix_x4_trans(b, vBase + swz<HD>(kk * 16 + vRow, 2 * dp + vChunk));
                mma_bf16(o[2 * dp], a, b[0], b[1]);
                mma_bf16(o[2 * dp + 1], a, b[2], b[3]);
            }
        }
        __syncthreads();                // this stage may be overwritten by the next prefetch
    }

    // Epilogue: O / l (l reduced over the quad), staged in the warp's own 16 rows of sQ.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        l[r] = (l[r] > 0.f) ? 1.f / l[r] : 0.f;
    }
    {
        const int r0 = warp * 16 + (lane >> 2);
#pragma unroll
        for (int n = 0; n < OT; ++n) {
            const unsigned lo = pack_bf16x2(o[n][0] * l[0], o[n][1] * l[0]);
            const unsigned hi = pack_bf16x2(o[n][2] * l[1], o[n][3] * l[1]);
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sQ + swz<HD>(r0, n) + colA * 2), "r"(lo));
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sQ + swz<HD>(r0 + 8, n) + colA * 2), "r"(hi));
        }
    }
    __syncwarp();
    {
        constexpr int CPR = HD / 8;
        __nv_bfloat16* Og = O + base;
#pragma unroll
        for (int k = 0; k < (16 * CPR) / 32; ++k) {
            const int idx = lane + k * 32;
            const int r = warp * 16 + idx / CPR, c = idx % CPR;
            uint4 v;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(sQ + swz<HD>(r, c)));
            if (q0 + r < S) *reinterpret_cast<uint4*>(Og + (long long)(q0 + r) * HD + c * 8) = v;
        }
    }
}

// grid = (ceil(S/BR), B*H) with BR = 16*NUM_WARPS (= 64), block = (NUM_THREADS) (= 128),
// dynamic shared memory = SMEM_BYTES(64) = (BR + 4*BC)*64*2 = 40960 bytes (defaults).
extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
attn_flash2_d64(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O,
                int B, int H, int S, int D, int causal)
{
    if (D != 64) return;
    flash2_body<64>(Q, K, V, O, S, causal);
}

// grid = (ceil(S/BR), B*H), block = (NUM_THREADS),
// dynamic shared memory = SMEM_BYTES(128) = (BR + 4*BC)*128*2 = 81920 bytes (defaults; > 48 KB: opt in).
extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
attention_bf16_flash2(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                 const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O,
                 int B, int H, int S, int D, int causal)
{
    if (D != 128) return;
    flash2_body<128>(Q, K, V, O, S, causal);
}
