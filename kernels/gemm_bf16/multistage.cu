// gemm_bf16 / multistage
// The sm_80-style tensor-core GEMM: mma.sync m16n8k16 BF16 (FP32 accumulate) fed by ldmatrix.x4
// as in mma_sync, with
//  * a STAGES-deep (default 4) cp.async.cg 16-byte pipeline in dynamic shared memory: STAGES-1
//    tiles in flight while one is computed (commit_group per tile, wait_group STAGES-2), no
//    staging registers, one barrier per BK tile;
//  * XOR-swizzled 16-byte chunks instead of padding: chunk c of tile row r is stored at chunk
//    c ^ f(r), so the 8 rows of every ldmatrix phase and every 8 consecutive cp.async chunks hit
//    8 different 16-byte bank groups (conflict-free, no wasted shared memory);
//  * a 128 x 256 block tile (BK = 32) over 8 warps of 64 x 64 (4 x 8 mma tiles, 128 FP32
//    accumulators per thread), ldmatrix fragments double-buffered in registers across the k16
//    steps (the loads of step k+1 are issued before the HMMAs of step k);
//  * grouped block rasterisation: the linear block id walks GROUP_M block rows at a time, column
//    by column, so the blocks resident together share A and B panels in L2;
//  * an epilogue staged through shared memory (rows padded by 8 bf16): bf16x2 (RN) fragments in,
//    full 128-byte rows of C out with 16-byte stores.
// Needs M % BM == 0, N % BN == 0, K % BK == 0; grid = (N / BN, M / BM) (any shape: the
// rasterisation only renumbers the blocks). Dynamic shared memory: STAGES*(BM+BN)*BK*2 bytes
// (98304 at the defaults; the launch must raise the kernel's limit above 48 KB).
// Expected limiter: tensor-core issue (HMMA), with the ldmatrix shared-memory traffic and the
// per-tile barrier as the next limits (mma.sync cannot reach Hopper's wgmma peak).

#include "elem.cuh"  // elem_t: BF16, or FP16 under GEMM_ELEM_FP16
#include "mma_bf16.cuh"  // mma_16816, pack_bf16x2

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64          // warp tile rows
#endif
#ifndef WN
#define WN 64          // warp tile columns
#endif
#ifndef STAGES
#define STAGES 4       // shared-memory pipeline depth (tiles resident at once)
#endif
#ifndef GROUP_M
#define GROUP_M 8      // block rows per rasterisation group (L2 reuse)
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 1    // blocks per SM promised to the register allocator (__launch_bounds__)
#endif

#define NUM_WARPS ((BM / WM) * (BN / WN))
#define NUM_THREADS (NUM_WARPS * 32)                 // = the manifest's block
#define CPR (BK / 8)                                 // 16-byte chunks per tile row
#define KSTEPS (BK / 16)                             // mma k16 steps per tile
#define A_LOADS ((BM * CPR) / NUM_THREADS)           // 16-byte cp.async of A per thread per tile
#define B_LOADS ((BN * CPR) / NUM_THREADS)
#define ROWS_PER_PASS (NUM_THREADS / CPR)            // tile rows covered by one cp.async per thread
#define MI (WM / 16)                                 // m16 mma tiles per warp
#define NI (WN / 8)                                  // n8 mma tiles per warp
#define A_TILE_BYTES (BM * BK * 2)
#define STAGE_BYTES ((BM + BN) * BK * 2)
#define SMEM_BYTES (STAGES * STAGE_BYTES)            // = the manifest's dynamic_smem
#define EPI_LD (WN + 8)                              // epilogue rows: bf16, padded by 16 bytes
#define MAX_SMEM_OPTIN (227 * 1024)                  // Hopper's per-block opt-in limit

static_assert(BM % WM == 0 && BN % WN == 0, "the block tile must be a whole number of warp tiles");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tiles: multiples of 16 (A x4 is m16, B x4 is an n8 pair)");
static_assert(NUM_THREADS <= 1024, "at most 32 warps per block");
static_assert(BK == 32 || BK == 64, "BK: 32 or 64 (the swizzle covers 4 or 8 chunks per row; the wait/refill order needs >= 2 k16 steps)");
static_assert(NUM_THREADS % CPR == 0 && ROWS_PER_PASS % 8 == 0,
              "a cp.async pass covers whole rows, a multiple of 8 (the swizzle period)");
static_assert((BM * CPR) % NUM_THREADS == 0 && (BN * CPR) % NUM_THREADS == 0,
              "the A and B tiles must split evenly into 16-byte copies over the threads");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(SMEM_BYTES <= MAX_SMEM_OPTIN, "STAGES tiles of A and B must fit in 227 KB of dynamic shared memory");
static_assert(NUM_WARPS * 16 * EPI_LD * 2 <= SMEM_BYTES, "the epilogue's 16-row strips must fit in the pipeline buffers");
static_assert(GROUP_M >= 1, "GROUP_M >= 1");

// Byte offset of 16-byte chunk `chunk` of tile row `row` (rows of BK bf16 = CPR chunks). The XOR
// term changes every 8/CPR rows and is periodic in 8 rows, so any 8 consecutive rows at one
// logical chunk (an ldmatrix phase) cover 8 distinct 16-byte bank groups.
static __device__ __forceinline__ int swz_xor(int row)
{
    return (row / (8 / CPR)) % CPR;
}
static __device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
static __device__ __forceinline__ void cp_async16(unsigned dst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
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
// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i gets it
// (thread t holds row t/4, columns 2(t%4), 2(t%4)+1).
static __device__ __forceinline__ void ldmatrix_x4(unsigned* r, unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
gemm_bf16_multistage(const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                     elem_t* __restrict__ C, int M, int N, int K)
{
    // STAGES x { A tile [BM][BK], B tile [BN][BK] }, both swizzled; the launch passes SMEM_BYTES.
    extern __shared__ __align__(128) unsigned char smem[];

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int warpRow = warp / (BN / WN);
    const int warpCol = warp % (BN / WN);

    // Grouped rasterisation: GROUP_M block rows form a group, walked column by column.
    const int gridN = gridDim.x, gridM = gridDim.y;
    const int bid = blockIdx.y * gridN + blockIdx.x;
    const int perGroup = GROUP_M * gridN;
    const int firstM = (bid / perGroup) * GROUP_M;
    const int groupRows = min(gridM - firstM, GROUP_M);
    const int inGroup = bid % perGroup;
    const int m0 = (firstM + inGroup % groupRows) * BM;
    const int n0 = (inGroup / groupRows) * BN;

    // cp.async assignment: chunk c = tid + i*NUM_THREADS is row c/CPR, chunk c%CPR of the tile
    // (consecutive threads: consecutive chunks of a row). ROWS_PER_PASS is a multiple of the
    // swizzle period, so pass i only adds i*ROWS_PER_PASS rows to the offsets.
    const int cpRow = tid / CPR, cpChunk = tid % CPR;
    const elem_t* aSrc = A + (size_t)(m0 + cpRow) * K + cpChunk * 8;
    const elem_t* bSrc = B + (size_t)(n0 + cpRow) * K + cpChunk * 8;
    const unsigned sBase = smem_u32(smem);
    const unsigned cpDst = sBase + cpRow * BK * 2 + ((cpChunk ^ swz_xor(cpRow)) * 16);

    // ldmatrix addresses. A x4 at (mi, kk): lanes 0-15 rows 0-15 at k16 chunk 2kk, lanes 16-31
    // the same rows at chunk 2kk+1 -> a0..a3 of the m16n8k16 A fragment. B x4 at (n8 pair p, kk):
    // matrix q = lane/8 is n rows 8(q/2)..+7 at chunk 2kk + q%2 -> b0, b1 of n8 tile 2p and
    // b0, b1 of tile 2p+1. mi*16 and p*16 rows keep the swizzle term (period 8 rows).
    const int aRow = warpRow * WM + (lane % 16);
    const int bRow = warpCol * WN + (lane % 8) + (lane / 16) * 8;
    const unsigned aLd = sBase + aRow * BK * 2;
    const unsigned bLd = sBase + A_TILE_BYTES + bRow * BK * 2;
    unsigned aCol[KSTEPS], bCol[KSTEPS];
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
        aCol[kk] = ((2 * kk + lane / 16) ^ swz_xor(aRow)) * 16;
        bCol[kk] = ((2 * kk + (lane / 8) % 2) ^ swz_xor(bRow)) * 16;
    }

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                acc[i][j][q] = 0.0f;
    unsigned af[2][MI][4], bf[2][NI][2];

    auto issueTile = [&](int t, int s) {
        const int k0 = t * BK;
        const unsigned dst = cpDst + s * STAGE_BYTES;
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i)
            cp_async16(dst + i * ROWS_PER_PASS * BK * 2, aSrc + (size_t)i * ROWS_PER_PASS * K + k0);
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i)
            cp_async16(dst + A_TILE_BYTES + i * ROWS_PER_PASS * BK * 2, bSrc + (size_t)i * ROWS_PER_PASS * K + k0);
    };
    auto loadFrags = [&](int s, int kk, int f) {
        const unsigned so = s * STAGE_BYTES;
#pragma unroll
        for (int i = 0; i < MI; ++i)
            ldmatrix_x4(af[f][i], aLd + so + i * 16 * BK * 2 + aCol[kk]);
#pragma unroll
        for (int p = 0; p < NI / 2; ++p) {
            unsigned r[4];
            ldmatrix_x4(r, bLd + so + p * 16 * BK * 2 + bCol[kk]);
            bf[f][2 * p][0] = r[0]; bf[f][2 * p][1] = r[1];
            bf[f][2 * p + 1][0] = r[2]; bf[f][2 * p + 1][1] = r[3];
        }
    };

    const int numTiles = K / BK;

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
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            if (kk == KSTEPS - 1) {
                // Groups committed (the refill at kk == 0 came first): tiles 0 .. t+STAGES-1;
                // all but the newest STAGES-2 done means tile t+1 has landed, for this thread,
                // and after the barrier for every thread. The barrier also orders every
                // ldmatrix of tile t before the refill of its stage at tile t+1.
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                sRead = (sRead + 1 == STAGES) ? 0 : sRead + 1;
            }
            // Fragments of the next k16 step (the first of tile t+1 at the last step; past the
            // last tile this reads a stale stage, harmlessly, and is never used).
            loadFrags(sRead, (kk + 1) % KSTEPS, (kk + 1) % 2);
            if (kk == 0) {
                // Refill the stage tile t-1 was read from: its last ldmatrix came before the
                // barrier at the end of tile t-1. Always commit, so the group count stays fixed.
                if (t + STAGES - 1 < numTiles) issueTile(t + STAGES - 1, sWrite);
                cp_async_commit();
                sWrite = (sWrite + 1 == STAGES) ? 0 : sWrite + 1;
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j)
                    mma_16816(acc[i][j], af[kk % 2][i], bf[kk % 2][j]);
        }
    }

    // Epilogue through shared memory (the pipeline buffers, free once every warp is done):
    // per warp EPI_ROWS rows x WN bf16 at a time, written as bf16x2 fragments (rows padded by
    // 16 bytes: a quad-row pattern of 8 rows x 16 bytes is conflict-free), read back as 16-byte
    // chunks, one full WN*2-byte row segment of C per WN/8 lanes.
    constexpr int EPI_ROWS = (NUM_WARPS * WM * EPI_LD * 2 <= SMEM_BYTES) ? WM : 16;
    constexpr int EPI_CHUNKS = EPI_ROWS * (WN / 8);
    static_assert(EPI_CHUNKS % 32 == 0, "the epilogue chunks must split evenly over the lanes");
    cp_async_wait<0>();
    __syncthreads();
    elem_t* epi = reinterpret_cast<elem_t*>(smem) + warp * EPI_ROWS * EPI_LD;
    const int g = lane / 4, q = lane % 4;
#pragma unroll
    for (int pass = 0; pass < WM / EPI_ROWS; ++pass) {
#pragma unroll
        for (int i = 0; i < EPI_ROWS / 16; ++i) {
            const int mi = pass * (EPI_ROWS / 16) + i;
#pragma unroll
            for (int j = 0; j < NI; ++j) {
                unsigned* p0 = reinterpret_cast<unsigned*>(epi + (i * 16 + g) * EPI_LD + j * 8 + 2 * q);
                unsigned* p1 = reinterpret_cast<unsigned*>(epi + (i * 16 + g + 8) * EPI_LD + j * 8 + 2 * q);
                *p0 = pack_bf16x2(acc[mi][j][0], acc[mi][j][1]);
                *p1 = pack_bf16x2(acc[mi][j][2], acc[mi][j][3]);
            }
        }
        __syncwarp();
#pragma unroll
        for (int c = lane; c < EPI_CHUNKS; c += 32) {
            const int r = c / (WN / 8), ch = c % (WN / 8);
            const uint4 v = *reinterpret_cast<const uint4*>(epi + r * EPI_LD + ch * 8);
            const int row = m0 + warpRow * WM + pass * EPI_ROWS + r;
            const int col = n0 + warpCol * WN + ch * 8;
            *reinterpret_cast<uint4*>(C + (size_t)row * N + col) = v;
        }
        __syncwarp();                           // read back before the next pass overwrites
    }
}
