// TEST DATA WITH PLANTED BUGS: not a shipped kernel. gpuprof's tests run it through
// `--kernels-dir tests/kernels/planted` to show that the check and compute-sanitizer catch each plant.
//
// A small BF16 tensor-core GEMM, C = A * B^T (A: M x K, B: N x K, C: M x N, all row-major, FP32
// accumulation, BF16 out): a 64 x 64 block tile, BK = 32, 4 warps of 32 x 32 (2 x 4 mma tiles of
// m16n8k16), a 2-stage cp.async pipeline into XOR-swizzled shared memory, fragments by ldmatrix.x4.
// Needs M % 64 == 0, N % 64 == 0, K % 32 == 0; grid = (N / 64, M / 64), 128 threads per block.
//
// The plants (compile-time, 0 or 1; the manifest's `defines` sets each):
//   PLANT_NO_BARRIER=1    drops the __syncthreads() that ends the compute of stage s, so a fast
//                         warp's cp.async refill of stage s (the tile after next) overwrites data
//                         that a slow warp is still reading with ldmatrix: a write-after-read race
//                         across warps (racecheck: a shared-memory hazard).
//   PLANT_WRONG_SWIZZLE=1 reads with ldmatrix through another XOR (chunk ^ (row & 3)) than the one
//                         cp.async wrote with (chunk ^ ((row >> 1) & 3)): every access stays in the
//                         tile, but most fragments hold the wrong 16-byte chunks (the check: WRONG).

#include <cuda_bf16.h>

#ifndef PLANT_NO_BARRIER
#define PLANT_NO_BARRIER 0
#endif
#ifndef PLANT_WRONG_SWIZZLE
#define PLANT_WRONG_SWIZZLE 0
#endif

namespace planted_gemm {

constexpr int TILE_M = 64;
constexpr int TILE_N = 64;
constexpr int TILE_K = 32;                     // bf16 per tile row: 64 bytes, 4 chunks of 16 bytes
constexpr int THREADS = 128;                   // 4 warps, 2 x 2 over the block tile
constexpr int WARP_M = 32;
constexpr int WARP_N = 32;
constexpr int CHUNKS = TILE_K / 8;             // 16-byte chunks per tile row
constexpr int OPERAND_ELEMS = TILE_M * TILE_K; // one stage of A (and of B: TILE_N == TILE_M)

static_assert(TILE_M == TILE_N, "one stage of A and one of B have the same size");
static_assert((TILE_M * CHUNKS) % THREADS == 0, "the cp.async copies split evenly over the threads");

// Element offset of logical chunk `chunk` of tile row `row` as cp.async stores it. Two 64-byte rows
// share a 128-byte line; the XOR by (row / 2) % 4 puts the 8 rows of one ldmatrix phase on 8
// different 16-byte bank groups.
__device__ __forceinline__ int stored_at(int row, int chunk) {
    return row * TILE_K + ((chunk ^ ((row >> 1) & 3)) << 3);
}

// Where ldmatrix looks for that chunk: the same map, unless the swizzle plant is in.
__device__ __forceinline__ int read_from(int row, int chunk) {
#if PLANT_WRONG_SWIZZLE
    return row * TILE_K + ((chunk ^ (row & 3)) << 3);  // PLANT: not the XOR the copy used
#else
    return stored_at(row, chunk);
#endif
}

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void copy16_async(void* dst_shared, const void* src_global) {
    asm volatile("{\n\tcp.async.cg.shared.global [%0], [%1], 16;\n\t}\n"
                 :: "r"(smem_u32(dst_shared)), "l"(src_global) : "memory");
}

__device__ __forceinline__ void close_group() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}

__device__ __forceinline__ void wait_all_but_newest() {
    asm volatile("cp.async.wait_group 1;" ::: "memory");
}

// Four 8x8 b16 matrices; lanes 8j..8j+7 give the row addresses of matrix j, and register j of
// lane l gets row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of matrix j.
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const __nv_bfloat16* row_start) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(row_start)));
}

__device__ __forceinline__ void hmma_16816(float (&acc)[4], const unsigned (&a)[4], unsigned b_lo, unsigned b_hi) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b_lo), "r"(b_hi));
}

// Start the copy of K tile `kt` (TILE_M rows of A, TILE_N rows of B) into one stage.
__device__ __forceinline__ void fetch_tile(__nv_bfloat16* sa, __nv_bfloat16* sb, const __nv_bfloat16* A,
                                           const __nv_bfloat16* B, int row0, int col0, int K, int kt) {
    const int k0 = kt * TILE_K;
#pragma unroll
    for (int pass = 0; pass < (TILE_M * CHUNKS) / THREADS; ++pass) {
        const int id = pass * THREADS + static_cast<int>(threadIdx.x);
        const int row = id / CHUNKS;
        const int chunk = id % CHUNKS;
        copy16_async(sa + stored_at(row, chunk), A + static_cast<size_t>(row0 + row) * K + k0 + chunk * 8);
        copy16_async(sb + stored_at(row, chunk), B + static_cast<size_t>(col0 + row) * K + k0 + chunk * 8);
    }
}

}  // namespace planted_gemm

extern "C" __global__ void __launch_bounds__(128)
gemm_bf16_planted(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                  __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    using namespace planted_gemm;
    __shared__ __align__(128) __nv_bfloat16 sA[2][OPERAND_ELEMS];
    __shared__ __align__(128) __nv_bfloat16 sB[2][OPERAND_ELEMS];

    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int warp = static_cast<int>(threadIdx.x) >> 5;
    const int warp_row = (warp >> 1) * WARP_M;  // this warp's 32 x 32 piece of the block tile
    const int warp_col = (warp & 1) * WARP_N;
    const int row0 = static_cast<int>(blockIdx.y) * TILE_M;  // grid.x tiles N, grid.y tiles M
    const int col0 = static_cast<int>(blockIdx.x) * TILE_N;
    const int tiles = K / TILE_K;

    float acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    // ldmatrix row and chunk each lane points at, relative to a fragment's corner:
    // A (m16 x k16): matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15) -> a0..a3;
    // B (two n8 x k16 tiles): matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
    const int a_row = lane & 15;
    const int a_chunk = lane >> 4;
    const int b_row = (lane & 7) | ((lane >> 4) << 3);
    const int b_chunk = (lane >> 3) & 1;

    fetch_tile(sA[0], sB[0], A, B, row0, col0, K, 0);
    close_group();

    for (int kt = 0; kt < tiles; ++kt) {
        const int stage = kt & 1;
        if (kt + 1 < tiles) {  // refill the other stage: the one computed in the previous iteration
            fetch_tile(sA[stage ^ 1], sB[stage ^ 1], A, B, row0, col0, K, kt + 1);
        }
        close_group();          // an empty group on the last tile keeps the wait below uniform
        wait_all_but_newest();  // this thread's copies of tile kt have landed
        __syncthreads();        // ... and every other thread's

        const __nv_bfloat16* tA = sA[stage];
        const __nv_bfloat16* tB = sB[stage];
#pragma unroll
        for (int ks = 0; ks < TILE_K / 16; ++ks) {
            unsigned afrag[2][4];
            unsigned bfrag[2][4];  // [n16 pair]: b0, b1 of the first n8 tile, then of the second
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
                ldsm_x4(afrag[mi], tA + read_from(warp_row + mi * 16 + a_row, ks * 2 + a_chunk));
#pragma unroll
            for (int np = 0; np < 2; ++np)
                ldsm_x4(bfrag[np], tB + read_from(warp_col + np * 16 + b_row, ks * 2 + b_chunk));
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni)
                    hmma_16816(acc[mi][ni], afrag[mi], bfrag[ni >> 1][(ni & 1) * 2], bfrag[ni >> 1][(ni & 1) * 2 + 1]);
        }
#if !PLANT_NO_BARRIER
        __syncthreads();  // every warp is done with this stage before the next iteration refills it
#endif
    }

    // Accumulator layout of m16n8: c0, c1 at (lane / 4, 2 (lane % 4) + {0, 1}); c2, c3 eight rows down.
    const int g = lane >> 2;
    const int t2 = (lane & 3) * 2;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
            const int r = row0 + warp_row + mi * 16 + g;
            const int c = col0 + warp_col + ni * 8 + t2;
            *reinterpret_cast<__nv_bfloat162*>(C + static_cast<size_t>(r) * N + c) =
                __floats2bfloat162_rn(acc[mi][ni][0], acc[mi][ni][1]);
            *reinterpret_cast<__nv_bfloat162*>(C + static_cast<size_t>(r + 8) * N + c) =
                __floats2bfloat162_rn(acc[mi][ni][2], acc[mi][ni][3]);
        }
    }
    (void)M;
}
