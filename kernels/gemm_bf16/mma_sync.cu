// gemm_bf16 / mma_sync
// wmma's successor with the fragments in our own hands: raw mma.sync.aligned.m16n8k16 BF16
// (FP32 accumulate) fed by ldmatrix.x4. B is N x K (K-major), which is exactly the "col" operand
// layout of mma.row.col, so B fragments come from ldmatrix without .trans: one x4 gives the two
// k-halves of two n8 fragments, one x4 of A gives a whole 16 x 16 A fragment. Block tile BM x BN
// (default 128 x 128), 8 warps of WM x WN (default 64 x 32 = 4 x 4 mma tiles, 64 FP32
// accumulators per thread), BK = 32. Shared-memory rows are BK + 8 bf16 (80 bytes): the 8 rows
// an ldmatrix phase reads land on 8 different 16-byte bank groups (conflict-free).
// Double buffering through registers: the 16-byte global loads of tile t+1 are issued before
// tile t is computed and stored to the other shared-memory buffer after it, so global latency
// hides behind the HMMAs and there is one barrier per BK tile. __launch_bounds__(256, 2) caps the
// kernel at 128 registers (122 used, no spills) so two blocks (16 warps, 80 KB of shared memory)
// share an SM: the other block's warps cover this one's barrier and load waits (at MINBLOCKS=1,
// 144 registers and one block per SM, it measured ~35% slower on an H200).
// Epilogue: bf16x2 (RN) stores straight from the accumulator fragments.
// Needs M % BM == 0, N % BN == 0, K % BK == 0.
// Expected limiter: tensor-core issue (HMMA) throttled by the ldmatrix/shared-memory traffic and
// the barrier per BK tile (a 2-deep pipeline: global latency is only partly hidden).

#include "elem.cuh"  // elem_t: BF16, or FP16 under GEMM_ELEM_FP16
#include "mma_bf16.cuh"  // mma_16816, pack_bf16x2

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64          // warp tile rows
#endif
#ifndef WN
#define WN 32          // warp tile columns
#endif
#ifndef PAD
#define PAD 8          // bf16 of padding per shared-memory tile row (16 bytes)
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 2    // blocks per SM promised to the register allocator (__launch_bounds__)
#endif

#define NUM_WARPS ((BM / WM) * (BN / WN))
#define NUM_THREADS (NUM_WARPS * 32)                 // = the manifest's block
#define LDS (BK + PAD)                               // leading dimension of As[m][k], Bs[n][k] (bf16)
#define CPR (BK / 8)                                 // 16-byte chunks per tile row
#define A_LOADS ((BM * CPR) / NUM_THREADS)           // 16-byte global loads of A per thread per tile
#define B_LOADS ((BN * CPR) / NUM_THREADS)
#define MI (WM / 16)                                 // m16 mma tiles per warp
#define NI (WN / 8)                                  // n8 mma tiles per warp
#define STAGE_ELEMS ((BM + BN) * LDS)                // bf16 per shared-memory buffer

static_assert(BM % WM == 0 && BN % WN == 0, "the block tile must be a whole number of warp tiles");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tiles: WM a multiple of 16, WN of 16 (ldmatrix.x4 loads n8 pairs)");
static_assert(NUM_THREADS <= 1024, "at most 32 warps per block");
static_assert(BK % 16 == 0, "BK must be a multiple of the mma depth 16");
static_assert(PAD % 8 == 0, "PAD must keep 16-byte rows (ldmatrix row addresses)");
static_assert((BM * CPR) % NUM_THREADS == 0 && (BN * CPR) % NUM_THREADS == 0,
              "the A and B tiles must split evenly into 16-byte loads over the threads");
static_assert(2 * STAGE_ELEMS * 2 <= 48 * 1024, "two buffers of A and B tiles must fit in 48 KB of static shared memory");

static __device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i gets it
// (thread t holds row t/4, columns 2(t%4), 2(t%4)+1).
static __device__ __forceinline__ void ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
gemm_bf16_mma_sync(const elem_t* __restrict__ A, const elem_t* __restrict__ B,
              elem_t* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(128) elem_t smem[2 * STAGE_ELEMS];   // 2 x { As[BM][LDS], Bs[BN][LDS] }

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int warpRow = warp / (BN / WN);
    const int warpCol = warp % (BN / WN);
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    // Global -> register copy assignment: chunk c = tid + i*NUM_THREADS is row c/CPR, 16-byte
    // chunk c%CPR of the tile (consecutive threads: consecutive chunks of a row).
    const elem_t* aSrc = A + (size_t)(m0 + tid / CPR) * K + (tid % CPR) * 8;
    const elem_t* bSrc = B + (size_t)(n0 + tid / CPR) * K + (tid % CPR) * 8;
    const int stOff = (tid / CPR) * LDS + (tid % CPR) * 8;           // + i*(NUM_THREADS/CPR)*LDS
    constexpr int ROWS_PER_PASS = NUM_THREADS / CPR;
    static_assert(NUM_THREADS % CPR == 0, "a pass of the copy covers whole rows");

    // ldmatrix row addresses (bytes, within a buffer). A x4 at (mi, kk): lanes 0-15 rows 0-15 at
    // k 0-7, lanes 16-31 rows 0-15 at k 8-15 -> registers a0..a3 of the m16n8k16 A fragment.
    // B x4 at (n8 pair p, kk): matrix q = lane/8 is n rows 8*(q/2)..+7 at k 8*(q%2)..+7 ->
    // registers b0, b1 of n8 tile 2p and b0, b1 of n8 tile 2p+1.
    const unsigned sBase = smem_u32(smem);
    const unsigned aLd = sBase + ((warpRow * WM + (lane % 16)) * LDS + (lane / 16) * 8) * 2;
    const unsigned bLd = sBase + (BM * LDS + (warpCol * WN + (lane % 8) + (lane / 16) * 8) * LDS + ((lane / 8) % 2) * 8) * 2;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                acc[i][j][q] = 0.0f;

    uint4 ra[A_LOADS], rb[B_LOADS];
    auto loadGlobal = [&](int k0) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i)
            ra[i] = *reinterpret_cast<const uint4*>(aSrc + (size_t)i * ROWS_PER_PASS * K + k0);
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i)
            rb[i] = *reinterpret_cast<const uint4*>(bSrc + (size_t)i * ROWS_PER_PASS * K + k0);
    };
    auto storeShared = [&](int buf) {
        elem_t* as = smem + buf * STAGE_ELEMS + stOff;
        elem_t* bs = as + BM * LDS;
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i)
            *reinterpret_cast<uint4*>(as + i * ROWS_PER_PASS * LDS) = ra[i];
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i)
            *reinterpret_cast<uint4*>(bs + i * ROWS_PER_PASS * LDS) = rb[i];
    };

    const int numTiles = K / BK;
    loadGlobal(0);
    storeShared(0);
    __syncthreads();

    for (int t = 0; t < numTiles; ++t) {
        const int buf = t & 1;
        if (t + 1 < numTiles) loadGlobal((t + 1) * BK);   // in flight while tile t is computed

        const unsigned bufOff = buf * STAGE_ELEMS * 2;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            unsigned af[MI][4], bf[NI][2];
#pragma unroll
            for (int i = 0; i < MI; ++i)
                ldmatrix_x4(af[i][0], af[i][1], af[i][2], af[i][3], aLd + bufOff + (i * 16 * LDS + kk * 16) * 2);
#pragma unroll
            for (int p = 0; p < NI / 2; ++p)
                ldmatrix_x4(bf[2 * p][0], bf[2 * p][1], bf[2 * p + 1][0], bf[2 * p + 1][1],
                            bLd + bufOff + (p * 16 * LDS + kk * 16) * 2);
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j)
                    mma_16816(acc[i][j], af[i], bf[j]);
        }

        // The other buffer was last read during tile t-1, before the barrier that ended it.
        if (t + 1 < numTiles) storeShared(buf ^ 1);
        __syncthreads();
    }

    // Epilogue: accumulator c0,c1 are (row g, cols 2q, 2q+1), c2,c3 are (row g+8, same cols),
    // g = lane/4, q = lane%4; two FP32 -> one bf16x2 (RN) 4-byte store each.
    const int g = lane / 4, q = lane % 4;
#pragma unroll
    for (int i = 0; i < MI; ++i) {
        const int row = m0 + warpRow * WM + i * 16 + g;
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            const int col = n0 + warpCol * WN + j * 8 + 2 * q;
            *reinterpret_cast<unsigned*>(C + (size_t)row * N + col) = pack_bf16x2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<unsigned*>(C + (size_t)(row + 8) * N + col) = pack_bf16x2(acc[i][j][2], acc[i][j][3]);
        }
    }
}
