// transpose / pipelined
// Changed from vectorized: a block moves TILES tiles, one under the other along the rows of in (so
// along a row of out: its 64 output rows grow by TILES contiguous 256-byte runs, longer DRAM bursts
// per out row), and overlaps them. The next tile's float4 loads are issued into registers right
// after the barrier that publishes the current tile, before the current tile's stores, so a block's
// loads and stores are in flight together instead of load -> barrier -> store per tile. With
// BUFFERS 2 (two padded 64x65 tiles, 33.3 kB) consecutive tiles use different shared buffers and one
// barrier per tile suffices; BUFFERS 1 needs a second barrier before each overwrite. Cache hints:
// LOAD_HINT 1 = ld.global.nc.L1::no_allocate.L2::256B, STORE_HINT 1 = __stcs (evict-first); both 0
// (plain) by default. Shapes, alignment and the guarded scalar path are vectorized's.
// Expected limiter: DRAM bandwidth.

#ifndef TILE
#define TILE 64
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 16
#endif
#ifndef TILES
#define TILES 2
#endif
#ifndef BUFFERS
#define BUFFERS 2
#endif
#ifndef LOAD_HINT
#define LOAD_HINT 0
#endif
#ifndef STORE_HINT
#define STORE_HINT 0
#endif

#define THREADS_X (TILE / 4)                            // one float4 of a tile row per thread
#define PER_THREAD (TILE / BLOCK_ROWS)                  // float4 per thread per tile

static_assert(TILE % 4 == 0 && TILE % BLOCK_ROWS == 0, "TILE must be a multiple of 4 (float4) and of BLOCK_ROWS");
static_assert(THREADS_X * BLOCK_ROWS <= 1024, "block is (TILE/4) x BLOCK_ROWS threads: at most 1024");
static_assert(TILES >= 1 && (BUFFERS == 1 || BUFFERS == 2), "TILES >= 1 tiles per block; BUFFERS 1 or 2");
static_assert(BUFFERS * TILE * (TILE + 1) * 4 <= 48 * 1024, "the padded tiles must fit in 48 KiB of static shared memory");
static_assert(LOAD_HINT == 0 || LOAD_HINT == 1, "LOAD_HINT: 0 plain, 1 L1::no_allocate.L2::256B");
static_assert(STORE_HINT == 0 || STORE_HINT == 1, "STORE_HINT: 0 plain, 1 __stcs");

static __device__ __forceinline__ float4 load4(const float* p)
{
#if LOAD_HINT == 1
    float4 v;                                           // volatile: never hoisted above its bounds check
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(__cvta_generic_to_global(p)));
    return v;
#else
    return *reinterpret_cast<const float4*>(p);
#endif
}

static __device__ __forceinline__ void store4(float* p, float4 v)
{
#if STORE_HINT == 1
    __stcs(reinterpret_cast<float4*>(p), v);
#else
    *reinterpret_cast<float4*>(p) = v;
#endif
}

// Rows r0 + ty + j*BLOCK_ROWS of in, columns c..c+3, into q (zeros outside in: stored in the
// tile, never written out).
static __device__ __forceinline__ void load_tile(float4 (&q)[PER_THREAD], const float* __restrict__ in,
                                                 int rows, int cols, int r0, int c, bool vec_in)
{
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int r = r0 + (int)threadIdx.y + j * BLOCK_ROWS;
        q[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r < rows) {
            const float* p = in + (size_t)r * cols + c;
            if (vec_in && c < cols) {                   // cols % 4 == 0: c < cols implies c + 3 < cols
                q[j] = load4(p);
            } else {
                if (c + 0 < cols) q[j].x = p[0];
                if (c + 1 < cols) q[j].y = p[1];
                if (c + 2 < cols) q[j].z = p[2];
                if (c + 3 < cols) q[j].w = p[3];
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS_X * BLOCK_ROWS)
transpose_pipelined(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[BUFFERS][TILE][TILE + 1];

    const int tx = threadIdx.x, ty = threadIdx.y;
    // Grid-uniform: does every row start on a 16-byte boundary? (cupy buffers are 256-byte aligned)
    const bool vec_in = (cols & 3) == 0;
    const bool vec_out = (rows & 3) == 0;

    const int c = blockIdx.x * TILE + 4 * tx;           // columns of in this thread loads
    const int first_row = blockIdx.y * (TILE * TILES);  // the block's first row of in
    const int orow0 = blockIdx.x * TILE + ty;           // rows of out (columns of in) it stores

    float4 q[PER_THREAD];
    load_tile(q, in, rows, cols, first_row, c, vec_in);

#pragma unroll 1
    for (int k = 0; k < TILES; ++k) {
        const int r_tile = first_row + k * TILE;        // block-uniform: the break is too
        if (r_tile >= rows)
            break;
        float (*buf)[TILE + 1] = tile[k % BUFFERS];
#if BUFFERS == 1
        if (k > 0)
            __syncthreads();                            // every column read of the previous tile is done
#endif
        // With two buffers, buf was last read in tile k - 2, before every thread passed tile k - 1's barrier.
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            buf[ty + j * BLOCK_ROWS][4 * tx + 0] = q[j].x;
            buf[ty + j * BLOCK_ROWS][4 * tx + 1] = q[j].y;
            buf[ty + j * BLOCK_ROWS][4 * tx + 2] = q[j].z;
            buf[ty + j * BLOCK_ROWS][4 * tx + 3] = q[j].w;
        }
        __syncthreads();

        // The next tile's loads go out now and land while this tile is stored.
        if (k + 1 < TILES && r_tile + TILE < rows)
            load_tile(q, in, rows, cols, r_tile + TILE, c, vec_in);

        // Row orow of out (a column of in), columns oc..oc+3 (rows of in).
        const int oc = r_tile + 4 * tx;
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            const int orow = orow0 + j * BLOCK_ROWS;
            if (orow >= cols)
                continue;
            const int t = ty + j * BLOCK_ROWS;
            const float4 v = make_float4(buf[4 * tx + 0][t], buf[4 * tx + 1][t], buf[4 * tx + 2][t], buf[4 * tx + 3][t]);
            float* p = out + (size_t)orow * rows + oc;
            if (vec_out && oc < rows) {                 // rows % 4 == 0: oc < rows implies oc + 3 < rows
                store4(p, v);
            } else {
                if (oc + 0 < rows) p[0] = v.x;
                if (oc + 1 < rows) p[1] = v.y;
                if (oc + 2 < rows) p[2] = v.z;
                if (oc + 3 < rows) p[3] = v.w;
            }
        }
    }
}
