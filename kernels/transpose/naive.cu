// transpose / naive
// One thread per element: out[c][r] = in[r][c]. threadIdx.x walks the columns of in, so a warp
// reads 32 consecutive floats of one row (one 128-byte line) but writes them into 32 different
// rows of out, `rows` floats apart: 32 sectors written for 128 useful bytes.
// Expected limiter: the strided stores (DRAM write sectors and L2 partial-line traffic).

#ifndef TILE
#define TILE 32
#endif

static_assert(TILE >= 1 && TILE * TILE <= 1024, "block is TILE x TILE threads: TILE*TILE must be <= 1024");

extern "C" __global__ void __launch_bounds__(TILE * TILE)
transpose_naive(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    const int c = blockIdx.x * TILE + threadIdx.x;     // column of in = row of out
    const int r = blockIdx.y * TILE + threadIdx.y;     // row of in = column of out
    if (r < rows && c < cols)
        out[(size_t)c * rows + r] = in[(size_t)r * cols + c];   // 64-bit offsets: rows*cols may pass 2^31
}
