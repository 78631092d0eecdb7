// gemm_bf16 / wmma
// The first tensor-core rung: nvcuda::wmma 16x16x16 BF16 fragments with FP32 accumulators.
// A BM x BN block tile (default 128 x 128, 8 warps) is split into WM x WN warp tiles (default
// 64 x 32: 4 x 2 accumulator fragments per warp). Each BK step (default 32) copies the A tile
// (BM x BK) and the B tile (BN x BK, B is N x K so its rows are K-contiguous) with 16-byte global
// loads into padded shared memory (rows of BK + PAD bf16: the 16-byte row shift spreads the
// fragment loads over the banks), then every warp loads matrix_a row_major fragments from the A
// tile and matrix_b col_major fragments straight from the B tile (element (k, n) of Bᵀ sits at
// Bs[n][k]) and issues its mma_syncs. Single-buffered: two barriers per BK step, and the next
// tile's global loads are only issued when the step begins (no overlap beyond other warps and
// the second resident block: 127 registers and 20 KB of shared memory allow two per SM).
// Epilogue: the FP32 accumulators go through shared memory (the tile buffers, reused) 16 rows of
// the warp tile at a time, and come back as 8 x BF16 (round to nearest even) 16-byte stores.
// Needs M % BM == 0, N % BN == 0, K % BK == 0 (so K % 8 == 0: 16-byte aligned rows).
// Expected limiter: latency: the load -> barrier -> compute sequence with a single buffer and
// wmma's shared-memory fragment loads (L1/shared-memory traffic), far below the HMMA peak.

#include "elem.cuh"  // elem_t: BF16, or FP16 under GEMM_ELEM_FP16
#include <mma.h>

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

#define NUM_WARPS ((BM / WM) * (BN / WN))
#define NUM_THREADS (NUM_WARPS * 32)                 // = the manifest's block
#define LDS (BK + PAD)                               // leading dimension of As[m][k], Bs[n][k] (bf16)
#define CPR (BK / 8)                                 // 16-byte chunks per tile row
#define A_LOADS ((BM * CPR) / NUM_THREADS)           // 16-byte global loads of A per thread per tile
#define B_LOADS ((BN * CPR) / NUM_THREADS)
#define LDC (WN + 4)                                 // leading dimension of the FP32 epilogue strip
#define FM (WM / 16)                                 // fragments per warp along m
#define FN (WN / 16)                                 // fragments per warp along n

static_assert(BM % WM == 0 && BN % WN == 0, "the block tile must be a whole number of warp tiles");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tiles are whole 16 x 16 fragments");
static_assert(NUM_THREADS <= 1024, "at most 32 warps per block");
static_assert(BK % 16 == 0, "BK must be a multiple of the fragment depth 16");
static_assert(PAD % 8 == 0, "PAD must keep 16-byte rows (and wmma's ldm a multiple of 8)");
static_assert((BM * CPR) % NUM_THREADS == 0 && (BN * CPR) % NUM_THREADS == 0,
              "the A and B tiles must split evenly into 16-byte loads over the threads");
static_assert(WN % 8 == 0 && (16 * WN / 8) % 32 == 0, "the epilogue strip must split into 8-wide chunks over 32 lanes");
static_assert(NUM_WARPS * 16 * LDC * 4 <= (BM + BN) * LDS * 2, "the FP32 epilogue strips must fit in the tile buffers");
static_assert((BM + BN) * LDS * 2 <= 48 * 1024, "the tiles must fit in 48 KB of static shared memory");

using namespace nvcuda;

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
gemm_bf16_wmma(const elem_t* __restrict__ A, const elem_t* __restrict__ B,
               elem_t* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(128) elem_t smem[(BM + BN) * LDS];
    elem_t* As = smem;                  // [BM][LDS]
    elem_t* Bs = smem + BM * LDS;       // [BN][LDS]

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int warpRow = warp / (BN / WN);
    const int warpCol = warp % (BN / WN);
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // 16-byte global loads: consecutive threads take consecutive 16-byte chunks of a row.
        uint4 ra[A_LOADS], rb[B_LOADS];
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int c = tid + i * NUM_THREADS, r = c / CPR, q = c % CPR;
            ra[i] = *reinterpret_cast<const uint4*>(A + (size_t)(m0 + r) * K + k0 + q * 8);
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int c = tid + i * NUM_THREADS, r = c / CPR, q = c % CPR;
            rb[i] = *reinterpret_cast<const uint4*>(B + (size_t)(n0 + r) * K + k0 + q * 8);
        }
        __syncthreads();                       // every warp is done with the previous tile
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int c = tid + i * NUM_THREADS, r = c / CPR, q = c % CPR;
            *reinterpret_cast<uint4*>(As + r * LDS + q * 8) = ra[i];
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int c = tid + i * NUM_THREADS, r = c / CPR, q = c % CPR;
            *reinterpret_cast<uint4*>(Bs + r * LDS + q * 8) = rb[i];
        }
        __syncthreads();                       // the tile is in shared memory

#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, elem_t, wmma::row_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, elem_t, wmma::col_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i)
                wmma::load_matrix_sync(fa[i], As + (warpRow * WM + i * 16) * LDS + kk, LDS);
#pragma unroll
            for (int j = 0; j < FN; ++j)       // col_major K x N: element (k, n) at Bs[n * LDS + k]
                wmma::load_matrix_sync(fb[j], Bs + (warpCol * WN + j * 16) * LDS + kk, LDS);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j)
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }

    // Epilogue: per warp, 16 rows x WN FP32 at a time through shared memory, then 8 BF16 per
    // 16-byte store (a row of the strip is WN*2 contiguous bytes of C).
    __syncthreads();                           // the tile buffers are free
    float* strip = reinterpret_cast<float*>(smem) + warp * 16 * LDC;
#pragma unroll
    for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::store_matrix_sync(strip + j * 16, acc[i][j], LDC, wmma::mem_row_major);
        __syncwarp();
#pragma unroll
        for (int c = lane; c < 16 * WN / 8; c += 32) {
            const int r = c / (WN / 8), q = c % (WN / 8);
            const float4 lo = *reinterpret_cast<const float4*>(strip + r * LDC + q * 8);
            const float4 hi = *reinterpret_cast<const float4*>(strip + r * LDC + q * 8 + 4);
            elem2_t p0 = floats_to_elem2(lo.x, lo.y), p1 = floats_to_elem2(lo.z, lo.w);
            elem2_t p2 = floats_to_elem2(hi.x, hi.y), p3 = floats_to_elem2(hi.z, hi.w);
            uint4 v;
            v.x = *reinterpret_cast<unsigned*>(&p0); v.y = *reinterpret_cast<unsigned*>(&p1);
            v.z = *reinterpret_cast<unsigned*>(&p2); v.w = *reinterpret_cast<unsigned*>(&p3);
            const int row = m0 + warpRow * WM + i * 16 + r;
            const int col = n0 + warpCol * WN + q * 8;
            *reinterpret_cast<uint4*>(C + (size_t)row * N + col) = v;
        }
        __syncwarp();                          // the strip is read before the next one lands
    }
}
