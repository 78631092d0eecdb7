// A learner's WMMA GEMM as public tutorials write it (one warp per 16x16 tile of C, fragments loaded
// straight from global memory with a leading dimension, no shared memory), in gemm_bf16's layout:
// C = A * B^T with A: M x K and B: N x K row-major, so B read as a K x N column-major matrix (ldb = K).
// No const, no __restrict__, as learners write them. Test data for `gpuprof run gemm_bf16 --add`;
// it needs M, N and K to be multiples of 16 (--require 'M%16==0,N%16==0,K%16==0').
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void wmma_gemm(__nv_bfloat16* A, __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K)
{
    int warpM = (blockIdx.y * blockDim.y + threadIdx.y);                 // tile row
    int warpN = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;      // tile column
    if (warpM * 16 >= M || warpN * 16 >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b_frag;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a_frag, A + warpM * 16 * K + k, K);
        wmma::load_matrix_sync(b_frag, B + warpN * 16 * K + k, K);
        wmma::mma_sync(acc, a_frag, b_frag, acc);
    }
    // FP32 tile through shared memory, then rounded to BF16 (a warp's 16x16 floats: 1 KB; up to 16 warps)
    __shared__ float tile[16][16 * 16];
    float* mine = tile[(threadIdx.y * blockDim.x + threadIdx.x) / warpSize];
    wmma::store_matrix_sync(mine, acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int i = threadIdx.x % warpSize; i < 256; i += warpSize)
        C[(warpM * 16 + i / 16) * N + warpN * 16 + i % 16] = __float2bfloat16_rn(mine[i]);
}
