// matmul / off_by_one_edge — deliberately wrong, for the integrity tests: kernels/matmul/
// smem_tiled.cu with one change, marked OFF BY ONE below: where K is not a multiple of TILE, the
// B tile at the K edge zeroes one row too many, so every C element misses the term k = K - 1.
// Right at 4096^3; the awkward check sizes (k = 65, 300) catch it. The original's notes follow.
// Stages TILE x TILE tiles of A and B in shared memory, so each global element is loaded once
// per block instead of once per thread (a TILE-fold cut in global/L2 traffic vs coalesced).
// Each thread still computes one C element, so every FMA needs two shared-memory loads.
// Expected limiter: shared-memory bandwidth / load-issue (2 LDS per FFMA), plus the two
// __syncthreads per tile.

#ifndef TILE
#define TILE 32
#endif

static_assert(TILE >= 1 && TILE * TILE <= 1024, "block is TILE x TILE threads: TILE*TILE must be <= 1024");

extern "C" __global__ __launch_bounds__(TILE * TILE) void matmul_off_by_one_edge(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x;                 // column inside the tile (coalesced, as before)
    const int ty = threadIdx.y;                 // row inside the tile
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Each thread loads one element of each tile; zero outside the matrices so the
        // edge tiles need no special case in the inner loop.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        const int k_end = K % TILE ? K - 1 : K;   // OFF BY ONE at the edge tile (should be K)
        Bs[ty][tx] = (k0 + ty < k_end && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();                        // tile fully written before anyone reads it

        // As[ty][k] is a broadcast within a warp, Bs[k][tx] is conflict-free.
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();                        // everyone done reading before the next overwrite
    }

    if (row < M && col < N)
        C[row * N + col] = acc;
}
