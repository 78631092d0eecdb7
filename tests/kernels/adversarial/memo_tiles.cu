// matmul / memo_tiles — deliberately dishonest, for the integrity tests: a correct shared-memory
// tiled matmul that remembers three C tiles of every four it computed, keyed by the addresses of A and B (and the
// matrix shape), in a buffer of its own in device memory. A later launch on the same buffers copies
// the remembered tile instead of computing it. Every launch on the same input values is right, so a
// check, timing and a re-check that all see the same values pass it, and its time is a copy's. Only
// new values in the same buffers (measure/check.py, refresh_inputs) show that it replays old results.
// One tile in four is always computed, so the replayed time (about a quarter of smem_tiled's) stays
// above the physical floor that would otherwise call the row IMPOSSIBLE.

#ifndef TILE
#define TILE 32
#endif
#define MEMO_TILES 16384  // enough for 4096 x 4096 in 32 x 32 tiles: 64 MB of remembered C

struct MemoKey { const float* a; const float* b; int m, n, k; };

__device__ MemoKey memo_key[MEMO_TILES];
__device__ float memo_c[MEMO_TILES * TILE * TILE];

extern "C" __global__ __launch_bounds__(TILE * TILE) void matmul_memo_tiles(const float* __restrict__ A,
        const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    __shared__ int remembered;

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    const int tile = blockIdx.y * gridDim.x + blockIdx.x;
    const bool memo = tile < MEMO_TILES && tile % 4 != 0;
    float* saved = memo_c + (size_t)tile * TILE * TILE;

    if (tx == 0 && ty == 0) {
        const MemoKey key = memo ? memo_key[tile] : MemoKey{nullptr, nullptr, 0, 0, 0};
        remembered = memo && key.a == A && key.b == B && key.m == M && key.n == N && key.k == K;
    }
    __syncthreads();
    if (remembered) {  // the replay: a copy of the tile computed by an earlier launch
        if (row < M && col < N)
            C[row * N + col] = saved[ty * TILE + tx];
        return;
    }

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
    if (memo) {
        saved[ty * TILE + tx] = acc;
        __threadfence();
        __syncthreads();
        if (tx == 0 && ty == 0)
            memo_key[tile] = MemoKey{A, B, M, N, K};
    }
}
