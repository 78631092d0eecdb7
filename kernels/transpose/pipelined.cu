// transpose / pipelined
// Changed from vectorized: (1) each thread loads a 4x4 block of in (four float4 from four
// consecutive rows, same columns), transposes it in registers (pure renaming: column k of the
// block is the float4 (q0.k, q1.k, q2.k, q3.k)), and writes it with four 128-bit shared stores
// (STS.128) into a tile held in the orientation of out; the store phase reads one float4 of an out
// row with one LDS.128. That is 1 STS.128 + 1 LDS.128 per float4 moved instead of 4 + 4 scalar
// accesses with 2-way conflicts: the MIO (shared-memory) queue was the top stall. (2) No padding:
// the float4 column g of tile row t lives at g ^ ((t >> 2) & 7) (XOR swizzle, SWIZZLE 1), so both
// phases are conflict-free: each quarter-warp's 8 lanes touch 8 distinct 16-byte bank groups
// (SWIZZLE 0 keeps the plain layout: 8-way conflicts on the stores, for comparison). (3) TILES
// tiles per block, one under the other along the rows of in: the next tile's float4 loads are
// issued right after the barrier that publishes the current tile, so they are in flight during
// its stores; with BUFFERS 2 consecutive tiles use different buffers and one barrier per tile
// suffices, BUFFERS 1 needs a second barrier before each overwrite. TILES 1 (one tile per block,
// 16 KiB of shared memory; resident blocks overlap each other instead) measured best before the
// smem change and is the default. Global accesses are vectorized's: each warp load or store is two
// whole 256-byte row segments. MIN_BLOCKS 8 caps registers at 32 so 8 blocks of 256 threads fit
// an SM (36 uncapped: 7); 0 = no cap (TILES > 1 with 2 buffers fits 7 blocks in shared memory
// anyway, and TILES 8 spills under the cap). Cache hints: LOAD_HINT 1 =
// ld.global.nc.L1::no_allocate.L2::256B, STORE_HINT 1 = __stcs (evict-first); both 0 (plain) by
// default. A side that is not a multiple of 4 (unaligned float4) or cut by the edge goes through
// guarded scalar accesses; the tile's rows outside in are zeros, stored and never written out.
// Expected limiter: DRAM bandwidth (shared memory no longer the queue the warps wait on).

#ifndef TILE
#define TILE 64
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 16
#endif
#ifndef TILES
#define TILES 1
#endif
#ifndef BUFFERS
#define BUFFERS 2
#endif
#ifndef SWIZZLE
#define SWIZZLE 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 8
#endif
#ifndef LOAD_HINT
#define LOAD_HINT 0
#endif
#ifndef STORE_HINT
#define STORE_HINT 0
#endif

#define THREADS_X (TILE / 4)                            // one float4 (one 4x4 block) column per thread
#define QUADS (TILE / 4)                                // float4 per tile row; 4x4 blocks per tile side
#define BLOCKS_PER_THREAD (QUADS / BLOCK_ROWS)          // 4x4 blocks a thread loads per tile
#define STORES_PER_THREAD (TILE / BLOCK_ROWS)           // out rows a thread stores per tile
#define SMEM_BUFFERS (TILES > 1 ? BUFFERS : 1)          // one tile per block needs one buffer

static_assert(TILE == 32 || TILE == 64, "TILE 32 or 64: the swizzle needs a multiple of 8 float4 per row; 128 is over 48 KiB");
static_assert(QUADS % BLOCK_ROWS == 0, "BLOCK_ROWS must divide TILE/4: each thread loads whole 4x4 blocks");
static_assert(TILES >= 1 && (BUFFERS == 1 || BUFFERS == 2), "TILES >= 1 tiles per block; BUFFERS 1 or 2");
static_assert(SMEM_BUFFERS * TILE * TILE * 4 <= 48 * 1024, "the tiles must fit in 48 KiB of static shared memory");
static_assert(MIN_BLOCKS >= 0, "MIN_BLOCKS: resident blocks per SM to fit registers for; 0 = no cap");
static_assert(SWIZZLE == 0 || SWIZZLE == 1, "SWIZZLE: 1 XOR swizzle, 0 plain layout (bank conflicts)");
static_assert(LOAD_HINT == 0 || LOAD_HINT == 1, "LOAD_HINT: 0 plain, 1 L1::no_allocate.L2::256B");
static_assert(STORE_HINT == 0 || STORE_HINT == 1, "STORE_HINT: 0 plain, 1 __stcs");

// Where float4 column g of tile row t is stored: XOR with bits 2..4 of t, so the 8 rows 4b..4b+28
// (step 4) a quarter-warp stores to land in 8 different bank groups; a bijection on g within its
// aligned group of 8, so a row's 8 consecutive float4 still cover all 8 groups.
static __device__ __forceinline__ int swizzle(int t, int g)
{
#if SWIZZLE == 1
    return g ^ ((t >> 2) & 7);
#else
    return g;
#endif
}

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

// The thread's 4x4 blocks of the tile whose first row of in is r_tile: block j covers rows
// r_tile + 4*(ty + j*BLOCK_ROWS) + i (i = 0..3), columns c..c+3; q[j][i] is row i of block j
// (zeros outside in).
static __device__ __forceinline__ void load_tile(float4 (&q)[BLOCKS_PER_THREAD][4], const float* __restrict__ in,
                                                 int rows, int cols, int r_tile, int c, bool vec_in)
{
#pragma unroll
    for (int j = 0; j < BLOCKS_PER_THREAD; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = r_tile + 4 * ((int)threadIdx.y + j * BLOCK_ROWS) + i;
            q[j][i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (r < rows) {
                const float* p = in + (size_t)r * cols + c;
                if (vec_in && c < cols) {               // cols % 4 == 0: c < cols implies c + 3 < cols
                    q[j][i] = load4(p);
                } else {
                    if (c + 0 < cols) q[j][i].x = p[0];
                    if (c + 1 < cols) q[j][i].y = p[1];
                    if (c + 2 < cols) q[j][i].z = p[2];
                    if (c + 3 < cols) q[j][i].w = p[3];
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS_X * BLOCK_ROWS, MIN_BLOCKS)
transpose_pipelined(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    // tile[b][t][g]: row t of the tile in out's orientation (column blockIdx.x*TILE + t of in),
    // float4 column g (rows 4g..4g+3 of the tile), at swizzle(t, g).
    __shared__ float4 tile[SMEM_BUFFERS][TILE][QUADS];

    const int tx = threadIdx.x, ty = threadIdx.y;
    // Grid-uniform: does every row start on a 16-byte boundary? (cupy buffers are 256-byte aligned)
    const bool vec_in = (cols & 3) == 0;
    const bool vec_out = (rows & 3) == 0;

    const int c = blockIdx.x * TILE + 4 * tx;           // columns of in this thread loads
    const int first_row = blockIdx.y * (TILE * TILES);  // the block's first row of in
    const int orow0 = blockIdx.x * TILE + ty;           // rows of out (columns of in) it stores

    float4 q[BLOCKS_PER_THREAD][4];
    load_tile(q, in, rows, cols, first_row, c, vec_in);

#pragma unroll 1
    for (int k = 0; k < TILES; ++k) {
        const int r_tile = first_row + k * TILE;        // block-uniform: the break is too
        if (r_tile >= rows)
            break;
        float4 (*buf)[QUADS] = tile[k % SMEM_BUFFERS];
#if SMEM_BUFFERS == 1
        if (k > 0)
            __syncthreads();                            // every read of the previous tile is done
#endif
        // With two buffers, buf was last read in tile k - 2, before every thread passed tile k - 1's barrier.
#pragma unroll
        for (int j = 0; j < BLOCKS_PER_THREAD; ++j) {
            const int g = ty + j * BLOCK_ROWS;          // the block's float4 column in out's orientation
            // Register transpose: column n of the 4x4 block is out row 4*tx + n, tile rows 4g..4g+3.
            buf[4 * tx + 0][swizzle(4 * tx + 0, g)] = make_float4(q[j][0].x, q[j][1].x, q[j][2].x, q[j][3].x);
            buf[4 * tx + 1][swizzle(4 * tx + 1, g)] = make_float4(q[j][0].y, q[j][1].y, q[j][2].y, q[j][3].y);
            buf[4 * tx + 2][swizzle(4 * tx + 2, g)] = make_float4(q[j][0].z, q[j][1].z, q[j][2].z, q[j][3].z);
            buf[4 * tx + 3][swizzle(4 * tx + 3, g)] = make_float4(q[j][0].w, q[j][1].w, q[j][2].w, q[j][3].w);
        }
        __syncthreads();

        // The next tile's loads go out now and land while this tile is stored.
        if (k + 1 < TILES && r_tile + TILE < rows)
            load_tile(q, in, rows, cols, r_tile + TILE, c, vec_in);

        // Row orow of out (a column of in), columns oc..oc+3 (rows of in).
        const int oc = r_tile + 4 * tx;
#pragma unroll
        for (int j = 0; j < STORES_PER_THREAD; ++j) {
            const int orow = orow0 + j * BLOCK_ROWS;
            if (orow >= cols)
                continue;
            const int t = ty + j * BLOCK_ROWS;
            const float4 v = buf[t][swizzle(t, tx)];
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
