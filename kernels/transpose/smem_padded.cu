// transpose / smem_padded
// Changed from smem_tiled: one padding column, tile[TILE][TILE + 1]. Element [i][j] sits in bank
// (i * 33 + j) % 32 = (i + j) % 32, so a warp reading the column tile[0..31][ty] touches 32
// different banks: the 32-way conflict becomes none. Same global traffic as smem_tiled.
// Expected limiter: DRAM bandwidth, short of copy because of the barrier between the read and
// write phases and only one element per thread in flight.

#ifndef TILE
#define TILE 32
#endif

static_assert(TILE >= 1 && TILE * TILE <= 1024, "block is TILE x TILE threads: TILE*TILE must be <= 1024");

extern "C" __global__ void __launch_bounds__(TILE * TILE)
transpose_smem_padded(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];              // +1: column reads hit 32 different banks

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c = blockIdx.x * TILE + tx;
    const int r = blockIdx.y * TILE + ty;
    if (r < rows && c < cols)
        tile[ty][tx] = in[(size_t)r * cols + c];
    __syncthreads();

    const int oc = blockIdx.y * TILE + tx;              // column of out = row of in
    const int orow = blockIdx.x * TILE + ty;            // row of out = column of in
    if (oc < rows && orow < cols)
        out[(size_t)orow * rows + oc] = tile[tx][ty];
}
