// transpose / multi_element
// Changed from smem_padded: a TILE x TILE tile is moved by only TILE x BLOCK_ROWS threads, each
// handling TILE / BLOCK_ROWS elements spaced BLOCK_ROWS rows apart. A thread's loads are
// independent, so they are all in flight before its first shared-memory store; the index math and
// the barrier are paid once per TILE/BLOCK_ROWS elements, and smaller blocks fit more per SM.
// Expected limiter: DRAM bandwidth (the barrier still separates each block's reads and writes).

#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif

static_assert(TILE % BLOCK_ROWS == 0, "each thread moves TILE/BLOCK_ROWS rows: BLOCK_ROWS must divide TILE");
static_assert(TILE * BLOCK_ROWS <= 1024, "block is TILE x BLOCK_ROWS threads: at most 1024");
static_assert(TILE * (TILE + 1) * 4 <= 48 * 1024, "the padded tile must fit in 48 KiB of static shared memory");

extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose_multi_element(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c = blockIdx.x * TILE + tx;
    const int r0 = blockIdx.y * TILE + ty;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (r0 + j < rows && c < cols)
            tile[ty + j][tx] = in[(size_t)(r0 + j) * cols + c];
    }
    __syncthreads();

    const int oc = blockIdx.y * TILE + tx;              // column of out = row of in
    const int orow0 = blockIdx.x * TILE + ty;           // first row of out = column of in
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        // tile[tx][ty + j] holds in[oc][orow0 + j], written above exactly when both are in range.
        if (oc < rows && orow0 + j < cols)
            out[(size_t)(orow0 + j) * rows + oc] = tile[tx][ty + j];
    }
}
