// attention_bf16 / fa3
// FlashAttention-3-style forward attention on Hopper's warpgroup tensor cores (sm_90a). A block owns
// BM = 128 query rows of one (b, h) and walks its K/V tiles of BN = 128 keys. Three warpgroups:
// warpgroup 0 is the producer (one thread: the Q tile once, then each K and V tile by the Tensor
// Memory Accelerator into a STAGES-deep ring of 128B-swizzled shared memory, K and V each on their
// own "full" and "empty" mbarriers; setmaxnreg gives its registers away), warpgroups 1 and 2 are the
// consumers, 64 query rows each. Per tile a consumer computes S = Q·Kᵀ with wgmma m64n128k16 (Q and K
// K-major in shared memory), the online softmax in FP32 registers (row max over the quad by
// shuffles, exp2 with D^-1/2·log2 e folded into one FFMA), rounds P to BF16 in registers, and
// accumulates O += P·V with wgmma m64nDk16 taking P from registers (the m64n128 accumulator layout
// of S is the A-fragment layout of P, 16 keys per k-step) and V from shared memory as stored,
// [key][dim], read transposed through an MN-major descriptor. The S GEMM of tile n is issued before
// the P·V GEMM of tile n-1 and waited for alone, meant to let the softmax of tile n run while the
// tensor cores finish P·V of n-1 (FlashAttention-3's intra-warpgroup overlap); ptxas 13.0 however
// schedules the wait for P·V before the exponentials, so the overlap that remains is between the
// two consumer warpgroups (one's softmax beside the other's GEMMs). A K stage is released as soon
// as its S GEMM is done, a V stage when its P·V is. O / l is written from registers as BF16 pairs.
// Q, K and V reach the kernel as tensor maps of their (B·H·S) × D row-major view, boxes of 128 rows
// × 64 columns (one swizzle row); rows past the tensor are zero-filled by the copy engine and keys
// at or past S are masked, so any S works (a tile's tail rows from the next head are masked keys or
// unstored queries). Causal: tiles wholly above the block's diagonal are never loaded; the tiles
// that cross it, and a ragged last tile, are masked. Blocks are handed out in groups of GROUP_HEADS
// heads, query block by query block (causal: the heaviest first), so heads in flight share K/V in L2.
// Expected limiter: tensor-core issue (HGMMA, ~65 % of the BF16 dense peak at 16×16×4096×128 on an
// H200, 0.96× cuDNN's SDPA), with the softmax's exponentials between a warpgroup's GEMMs and the
// per-block prologue (Q and the first K tile) and register-store epilogue, which nothing overlaps
// (one block per SM).
#include <cuda_bf16.h>

#include "../gemm_bf16/hopper.cuh"   // TMA, mbarriers, descriptors, wgmma fences, setmaxnreg

#ifndef STAGES
#define STAGES 3           // K/V ring depth (32 KB of K and 32 KB of V per stage at D = 128; 3: 225 KB in all)
#endif
#ifndef GROUP_HEADS
#define GROUP_HEADS 8      // (b, h) heads whose query blocks are interleaved in launch order
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 24   // setmaxnreg.dec target of the producer warpgroup
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 240  // setmaxnreg.inc target of the consumer warpgroups
#endif

#define BM 128             // query rows per block: two consumer warpgroups × wgmma M = 64
#define BN 128             // keys per K/V tile: the N of the S GEMM, the K of the P·V GEMM
#define WG_M 64
#define NUM_CONSUMERS (BM / WG_M)
#define NUM_THREADS (128 * (NUM_CONSUMERS + 1))
#define SLAB_COLS 64       // a tile is stored as D/64 slabs of rows × 128 bytes (one TMA box each)
#define SLAB_BYTES(ROWS) ((ROWS) * 128)
#define SMEM_ALIGN 1024    // the 128B swizzle pattern repeats every 8 rows × 128 B; slabs start on it
#define SMEM_BYTES_D(HD) ((BM + 2 * STAGES * BN) * (HD) * 2 + SMEM_ALIGN)  // Q + STAGES × (K + V)
#define SMEM_BYTES ((BM + 2 * STAGES * BN) * 128 * 2 + SMEM_ALIGN)          // = SMEM_BYTES_D(128): the manifest's dynamic_smem
#define MAX_SMEM_OPTIN (227 * 1024)

static_assert(NUM_CONSUMERS == 2, "two consumer warpgroups of 64 rows (BM = 128)");
static_assert(STAGES >= 2, "the K/V ring needs at least two stages");
static_assert(SMEM_BYTES_D(128) == SMEM_BYTES && SMEM_BYTES <= MAX_SMEM_OPTIN, "Q + STAGES stages of K and V at D = 128 must fit in 227 KB");
static_assert(GROUP_HEADS >= 1, "GROUP_HEADS: at least one head per launch group");
static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0 && PRODUCER_REGS >= 24 && CONSUMER_REGS <= 256,
              "setmaxnreg counts are multiples of 8 in [24, 256]");
static_assert(128 * PRODUCER_REGS + 128 * NUM_CONSUMERS * CONSUMER_REGS <= 65536,
              "the warpgroups' registers must fit the 64K-register file");

#define NEG_INF (__int_as_float(0xff800000))

// 2^x on the MUFU (one instruction; -inf -> +0). Volatile: kept before the wait for the previous P·V
// (the compiler would otherwise sink the softmax's exponentials past it and lose the overlap).
static __device__ __forceinline__ float ex2(float x)
{
    float y;
    asm volatile("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
static __device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);   // .x (low half) = lo: the smaller column
    return *reinterpret_cast<unsigned*>(&v);
}
// Keeps P's registers live (and unmoved) until the P·V wgmma that reads them has been waited for.
static __device__ __forceinline__ void reg_fence(unsigned (&r)[32])
{
#pragma unroll
    for (int i = 0; i < 32; ++i)
        asm volatile("" : "+r"(r[i])::"memory");
}

// S[64×128] (+)= A[64×16] · B[128×16]ᵀ, A and B K-major in shared memory (trans-a = trans-b = 0);
// SCALE_D = 0 overwrites the accumulators (the first k-step of a tile), 1 accumulates.
template <int SCALE_D>
static __device__ __forceinline__ void wgmma_ss_m64n128k16(float (&d)[64], unsigned long long da, unsigned long long db)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "n"(SCALE_D));
}

// O[64×128] += P[64×16] · V[16×128], P from registers (the m64k16 A fragment), V in shared memory as
// stored, [key][dim]: MN-major for B, read transposed (trans-b = 1).
static __device__ __forceinline__ void wgmma_rs_m64n128k16(float (&d)[64], const unsigned (&a)[4], unsigned long long db)
{
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// O[64×64] += P[64×16] · V[16×64], P from registers (the m64k16 A fragment), V in shared memory as
// stored, [key][dim]: MN-major for B, read transposed (trans-b = 1).
static __device__ __forceinline__ void wgmma_rs_m64n64k16(float (&d)[32], const unsigned (&a)[4], unsigned long long db)
{
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// Raw scores of one tile, S = Q·Kᵀ over the head dim: HD/16 k-steps, +32 bytes per step inside a
// swizzled 128-byte row, the next 64-column slab every 4 steps. qBase: this warpgroup's 64 rows of Q.
template <int HD>
static __device__ __forceinline__ void s_gemm(float (&s)[64], unsigned qBase, unsigned kBase)
{
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
        const unsigned long long da = smem_desc(qBase + (kk / 4) * SLAB_BYTES(BM) + (kk % 4) * 32);
        const unsigned long long db = smem_desc(kBase + (kk / 4) * SLAB_BYTES(BN) + (kk % 4) * 32);
        if (kk == 0)
            wgmma_ss_m64n128k16<0>(s, da, db);
        else
            wgmma_ss_m64n128k16<1>(s, da, db);
    }
}

// O += P·V for one tile: BN/16 k-steps of 16 keys; k-step kk's A fragment is p[4kk..4kk+3] (rows g and
// g+8, keys 16kk + 2c.. and 16kk + 8 + 2c..), its B the 16 rows of V from key 16kk (2048 bytes on).
template <int HD>
static __device__ __forceinline__ void pv_gemm(float (&o)[HD / 2], const unsigned (&p)[32], unsigned vBase)
{
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
        const unsigned a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
        const unsigned long long db = smem_desc_mn(vBase + kk * 16 * 128, SLAB_BYTES(BN));
        if constexpr (HD == 128)
            wgmma_rs_m64n128k16(o, a, db);
        else
            wgmma_rs_m64n64k16(o, a, db);
    }
}

template <int HD>
static __device__ __forceinline__ void fa3_body(const TensorMap* tmQ, const TensorMap* tmK, const TensorMap* tmV,
                                                __nv_bfloat16* __restrict__ O, int S, int causal)
{
    static_assert(HD == 64 || HD == 128, "head dims 64 and 128 (the P·V wgmma's N)");
    constexpr unsigned Q_BYTES = BM * HD * 2, KV_BYTES = BN * HD * 2;
    constexpr float sl2 = HD == 64 ? 0.18033688011112042f : 0.12751743082459868f;   // D^-1/2 · log2 e

    extern __shared__ unsigned char smemRaw[];
    __shared__ __align__(8) unsigned long long fullQ;
    __shared__ __align__(8) unsigned long long fullK[STAGES], fullV[STAGES];    // TMA bytes landed
    __shared__ __align__(8) unsigned long long emptyK[STAGES], emptyV[STAGES];  // every consumer warp done

    const unsigned base = (smem_u32(smemRaw) + (SMEM_ALIGN - 1)) & ~unsigned(SMEM_ALIGN - 1);
    const unsigned sQ = base;
    const unsigned sK0 = sQ + Q_BYTES;                    // STAGES K tiles, then STAGES V tiles
    const unsigned sV0 = sK0 + STAGES * KV_BYTES;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        mbar_init(smem_u32(&fullQ), 1);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&fullK[s]), 1);                        // the producer's expect_tx
            mbar_init(smem_u32(&fullV[s]), 1);
            mbar_init(smem_u32(&emptyK[s]), NUM_CONSUMERS * 4);       // lane 0 of every consumer warp
            mbar_init(smem_u32(&emptyV[s]), NUM_CONSUMERS * 4);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();

    // Launch order -> (head, query block): groups of GROUP_HEADS heads, within a group query block by
    // query block (heaviest first when causal), the group's heads side by side.
    const int numQB = (int)gridDim.x, BH = (int)gridDim.y;
    const int lin = (int)blockIdx.x + (int)blockIdx.y * numQB;
    const int perGroup = GROUP_HEADS * numQB;
    const int grp = lin / perGroup;
    const int within = lin - grp * perGroup;
    const int nh = min(GROUP_HEADS, BH - grp * GROUP_HEADS);
    const int qi = within / nh;
    const int bh = grp * GROUP_HEADS + (within - qi * nh);
    const int q0 = (causal ? numQB - 1 - qi : qi) * BM;
    const int numKT = (S + BN - 1) / BN;
    const int nT = causal ? min(numKT, (q0 + BM + BN - 1) / BN) : numKT;   // key tiles this block visits

    if (wg == 0) {
        // ---- producer ------------------------------------------------------------------------
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            const int rowKV = bh * S;                    // the head's first row in the (B·H·S) × D view
            mbar_expect_tx(smem_u32(&fullQ), Q_BYTES);
#pragma unroll
            for (int c = 0; c < HD / SLAB_COLS; ++c)
                tma_load_2d(sQ + c * SLAB_BYTES(BM), tmQ, smem_u32(&fullQ), c * SLAB_COLS, rowKV + q0);
            for (int n = 0; n < nT; ++n) {
                const int st = n % STAGES;
                const unsigned ph = (n / STAGES) & 1;
                const unsigned fk = smem_u32(&fullK[st]), fv = smem_u32(&fullV[st]);
                mbar_wait(smem_u32(&emptyK[st]), ph ^ 1);   // first pass: free at once
                mbar_expect_tx(fk, KV_BYTES);
#pragma unroll
                for (int c = 0; c < HD / SLAB_COLS; ++c)
                    tma_load_2d(sK0 + st * KV_BYTES + c * SLAB_BYTES(BN), tmK, fk, c * SLAB_COLS, rowKV + n * BN);
                mbar_wait(smem_u32(&emptyV[st]), ph ^ 1);
                mbar_expect_tx(fv, KV_BYTES);
#pragma unroll
                for (int c = 0; c < HD / SLAB_COLS; ++c)
                    tma_load_2d(sV0 + st * KV_BYTES + c * SLAB_BYTES(BN), tmV, fv, c * SLAB_COLS, rowKV + n * BN);
            }
        }
        return;
    }

    // ---- consumers -------------------------------------------------------------------------------
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
    const int warp = tid / 32, lane = tid % 32;
    const unsigned qBase = sQ + cw * WG_M * 128;        // this warpgroup's 64 rows of each Q slab
    const int wgRow0 = q0 + cw * WG_M;                  // its first query row in the head
    const int row0 = wgRow0 + warp * 16 + lane / 4;     // this thread's rows: row0 and row0 + 8

    float o[HD / 2];
#pragma unroll
    for (int i = 0; i < HD / 2; ++i)
        o[i] = 0.f;
    float s[64];
    unsigned p[32];
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.f, 0.f};   // running max (raw scores), this lane's part of the sum
    float alpha[2];

    // Mask, then the online softmax of one tile of raw scores, in place: s becomes unnormalised P, and
    // alpha the factor by which O must be rescaled before P·V of this tile is added.
    auto softmax = [&](int n) {
        const int kv0 = n * BN;
        if (kv0 + BN > S || (causal && kv0 + BN - 1 > wgRow0)) {     // warpgroup-uniform
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = row0 + 8 * r;
                const int jMax = (causal ? min(row, S - 1) : S - 1) - kv0 - 2 * (lane & 3);  // last key kept
#pragma unroll
                for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        if (8 * j + e > jMax) s[4 * j + 2 * r + e] = NEG_INF;
            }
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float mx = m[r];
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
                mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            // 1 when unchanged, 0 when m was -inf (the first tile); a row still fully masked keeps 1.
            alpha[r] = mx == m[r] ? 1.f : ex2((m[r] - mx) * sl2);
            m[r] = mx;
            const float ms = mx == NEG_INF ? 0.f : mx * sl2;
            float sum = 0.f;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float pe = ex2(fmaf(s[4 * j + 2 * r + e], sl2, -ms));
                    s[4 * j + 2 * r + e] = pe;
                    sum += pe;
                }
            l[r] = l[r] * alpha[r] + sum;
        }
    };
    // P to BF16 pairs: p[i] = (s[2i], s[2i+1]), the m64k16 A fragments of the P·V k-steps.
    auto pack_p = [&]() {
#pragma unroll
        for (int i = 0; i < 32; ++i)
            p[i] = pack_bf16x2(s[2 * i], s[2 * i + 1]);
    };
    auto release = [&](unsigned long long* bar) {
        __syncwarp();
        if (lane == 0)
            mbar_arrive(smem_u32(bar));
    };

    mbar_wait(smem_u32(&fullQ), 0);
    mbar_wait(smem_u32(&fullK[0]), 0);
    wgmma_fence();
    s_gemm<HD>(s, qBase, sK0);
    wgmma_commit();
    wgmma_wait<0>();
    acc_fence(s);
    release(&emptyK[0]);
    softmax(0);                                          // O is still zero: alpha unused
    pack_p();

#pragma unroll 1
    for (int n = 1; n < nT; ++n) {
        const int st = n % STAGES, pst = (n - 1) % STAGES;
        const unsigned ph = (n / STAGES) & 1, pph = ((n - 1) / STAGES) & 1;
        mbar_wait(smem_u32(&fullK[st]), ph);
        wgmma_fence();                                   // s, o and p were written since the last wgmma
        s_gemm<HD>(s, qBase, sK0 + st * KV_BYTES);       // S of tile n ...
        wgmma_commit();
        mbar_wait(smem_u32(&fullV[pst]), pph);
        pv_gemm<HD>(o, p, sV0 + pst * KV_BYTES);         // ... then O += P·V of tile n-1
        wgmma_commit();
        wgmma_wait<1>();                                 // S of tile n is done (P·V may still run)
        acc_fence(s);
        release(&emptyK[st]);
        softmax(n);
        wgmma_wait<0>();                                 // P·V of tile n-1 is done: O and P are free
        acc_fence(o);
        reg_fence(p);
        release(&emptyV[pst]);
#pragma unroll
        for (int j = 0; j < HD / 8; ++j) {
            o[4 * j] *= alpha[0];
            o[4 * j + 1] *= alpha[0];
            o[4 * j + 2] *= alpha[1];
            o[4 * j + 3] *= alpha[1];
        }
        pack_p();
    }
    {
        const int lst = (nT - 1) % STAGES;
        mbar_wait(smem_u32(&fullV[lst]), ((nT - 1) / STAGES) & 1);
        wgmma_fence();
        pv_gemm<HD>(o, p, sV0 + lst * KV_BYTES);
        wgmma_commit();
        wgmma_wait<0>();
        acc_fence(o);
        reg_fence(p);
    }

    // Epilogue: O / l (l reduced over the quad), BF16 pairs straight from the accumulators.
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        inv[r] = l[r] > 0.f ? 1.f / l[r] : 0.f;
    }
    __nv_bfloat16* Og = O + (long long)bh * S * HD;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int row = row0 + 8 * r;
        if (row < S) {
            __nv_bfloat16* dst = Og + (long long)row * HD + 2 * (lane & 3);
#pragma unroll
            for (int j = 0; j < HD / 8; ++j)
                *reinterpret_cast<__nv_bfloat162*>(dst + 8 * j) =
                    __floats2bfloat162_rn(o[4 * j + 2 * r] * inv[r], o[4 * j + 2 * r + 1] * inv[r]);
        }
    }
}

// grid = (ceil(S/BM), B*H), block = (NUM_THREADS) = 384, dynamic shared memory = SMEM_BYTES_D(64)
// = (BM + 2*STAGES*BN)*64*2 + 1024 = 115712 bytes (defaults). tmQ, tmK, tmV: tensor maps of the
// (B·H·S) × 64 views, BF16, boxes of 128 rows × 64 columns, 128B swizzle.
extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
attn_fa3_d64(const __grid_constant__ TensorMap tmQ, const __grid_constant__ TensorMap tmK,
             const __grid_constant__ TensorMap tmV, __nv_bfloat16* __restrict__ O,
             int B, int H, int S, int D, int causal)
{
    if (D != 64) return;
    fa3_body<64>(&tmQ, &tmK, &tmV, O, S, causal);
}

// grid = (ceil(S/BM), B*H), block = (NUM_THREADS), dynamic shared memory = SMEM_BYTES = 230400 bytes
// (defaults); the tensor maps as above over the (B·H·S) × 128 views.
extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
attention_bf16_fa3(const __grid_constant__ TensorMap tmQ, const __grid_constant__ TensorMap tmK,
                   const __grid_constant__ TensorMap tmV, __nv_bfloat16* __restrict__ O,
                   int B, int H, int S, int D, int causal)
{
    if (D != 128) return;
    fa3_body<128>(&tmQ, &tmK, &tmV, O, S, causal);
}
