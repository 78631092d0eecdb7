// transpose / vectorized
// Changed from multi_element: 16-byte float4 global loads and stores (a quarter of the memory
// instructions) and a larger TILE x TILE tile (64: 16.6 KB of shared memory). A warp is 16 x 2
// threads, so every load reads, and every store writes, two whole 256-byte row segments; each
// thread moves TILE/BLOCK_ROWS float4 per phase. Stores into the padded tile are scalar; the
// column read gathers four floats into one float4. Threads tx and tx + 8 share a bank (2-way
// conflicts), which shared memory absorbs. A side that is not a multiple of 4 (unaligned float4)
// or cut by the edge goes through guarded scalar accesses. Expected limiter: DRAM bandwidth.

#ifndef TILE
#define TILE 64
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 16
#endif

#define THREADS_X (TILE / 4)                            // one float4 of a tile row per thread

static_assert(TILE % 4 == 0 && TILE % BLOCK_ROWS == 0, "TILE must be a multiple of 4 (float4) and of BLOCK_ROWS");
static_assert(THREADS_X * BLOCK_ROWS <= 1024, "block is (TILE/4) x BLOCK_ROWS threads: at most 1024");
static_assert(TILE * (TILE + 1) * 4 <= 48 * 1024, "the padded tile must fit in 48 KiB of static shared memory");

extern "C" __global__ void __launch_bounds__(THREADS_X * BLOCK_ROWS)
transpose_vectorized(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];

    const int tx = threadIdx.x, ty = threadIdx.y;
    // Grid-uniform: does every row start on a 16-byte boundary? (cupy buffers are 256-byte aligned)
    const bool vec_in = (cols & 3) == 0;
    const bool vec_out = (rows & 3) == 0;

    // Read phase: columns c..c+3 of rows r0 + j of in.
    const int c = blockIdx.x * TILE + 4 * tx;
    const int r0 = blockIdx.y * TILE + ty;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int r = r0 + j;
        float4 q = make_float4(0.0f, 0.0f, 0.0f, 0.0f);  // zeros outside in: stored, never written out
        if (r < rows) {
            const float* p = in + (size_t)r * cols + c;
            if (vec_in && c < cols) {                     // cols % 4 == 0: c < cols implies c + 3 < cols
                q = *reinterpret_cast<const float4*>(p);
            } else {
                if (c + 0 < cols) q.x = p[0];
                if (c + 1 < cols) q.y = p[1];
                if (c + 2 < cols) q.z = p[2];
                if (c + 3 < cols) q.w = p[3];
            }
        }
        tile[ty + j][4 * tx + 0] = q.x;
        tile[ty + j][4 * tx + 1] = q.y;
        tile[ty + j][4 * tx + 2] = q.z;
        tile[ty + j][4 * tx + 3] = q.w;
    }
    __syncthreads();

    // Write phase: row orow0 + j of out (a column of in), columns oc..oc+3 (rows of in).
    const int oc = blockIdx.y * TILE + 4 * tx;
    const int orow0 = blockIdx.x * TILE + ty;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int orow = orow0 + j;
        if (orow >= cols)
            continue;
        const float4 q = make_float4(tile[4 * tx + 0][ty + j], tile[4 * tx + 1][ty + j],
                                     tile[4 * tx + 2][ty + j], tile[4 * tx + 3][ty + j]);
        float* p = out + (size_t)orow * rows + oc;
        if (vec_out && oc < rows) {                       // rows % 4 == 0: oc < rows implies oc + 3 < rows
            *reinterpret_cast<float4*>(p) = q;
        } else {
            if (oc + 0 < rows) p[0] = q.x;
            if (oc + 1 < rows) p[1] = q.y;
            if (oc + 2 < rows) p[2] = q.z;
            if (oc + 3 < rows) p[3] = q.w;
        }
    }
}
