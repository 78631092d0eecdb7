// transpose / smem_tiled
// Changed from naive: the block first copies a TILE x TILE tile of in into shared memory (a warp
// reads one row segment), then writes it back out transposed so a warp also WRITES one row
// segment of out: both global sides coalesce. The price: the write phase reads a COLUMN of the
// tile, tile[tx][ty], whose 32 floats are 32 floats apart, all in one bank: a 32-way conflict.
// Expected limiter: shared-memory bank conflicts (replays) and the barrier between the phases.

#ifndef TILE
#define TILE 32
#endif

static_assert(TILE >= 1 && TILE * TILE <= 1024, "block is TILE x TILE threads: TILE*TILE must be <= 1024");

extern "C" __global__ void __launch_bounds__(TILE * TILE)
transpose_smem_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    // Read phase: element (row r, column c) of in.
    const int c = blockIdx.x * TILE + tx;
    const int r = blockIdx.y * TILE + ty;
    if (r < rows && c < cols)
        tile[ty][tx] = in[(size_t)r * cols + c];
    __syncthreads();                                    // the whole tile is in before anyone reads it

    // Write phase: the block's tile of out starts at row blockIdx.x*TILE (columns of in) and
    // column blockIdx.y*TILE (rows of in); tx again walks the contiguous dimension.
    const int oc = blockIdx.y * TILE + tx;              // column of out = row of in
    const int orow = blockIdx.x * TILE + ty;            // row of out = column of in
    // tile[tx][ty] was written by thread (ty, tx) exactly when oc < rows and orow < cols.
    if (oc < rows && orow < cols)
        out[(size_t)orow * rows + oc] = tile[tx][ty];
}
