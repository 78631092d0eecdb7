// attention_bf16 / naive
// The three-kernel baseline, the way attention reads in a textbook: (1) scores P = Q Kᵀ · D^-1/2
// written to an FP32 workspace of B·H·S·S floats (causal: key j > query i stored as -inf),
// one thread per score; (2) softmax of each row of P in place, one block per row (max, then sum
// of exp, then normalise; FP32 shared-memory tree reductions); (3) O = P V, one thread per output
// element. Nothing is fused: the S×S matrix goes to DRAM and back three times.
// Expected limiter: DRAM traffic of the S×S score matrix (written, read+written, read again),
// plus uncoalesced K reads in the scores kernel.
#include <cuda_bf16.h>

#ifndef SCORE_TILE
#define SCORE_TILE 16      // scores kernel: block = (SCORE_TILE, SCORE_TILE) threads, x = key, y = query
#endif
#ifndef SOFTMAX_BLOCK
#define SOFTMAX_BLOCK 256  // softmax kernel: one block of SOFTMAX_BLOCK threads per row of P
#endif
#ifndef PV_BX
#define PV_BX 32           // P·V kernel: block = (PV_BX, PV_BY), x = head dim, y = query
#endif
#ifndef PV_BY
#define PV_BY 8
#endif

static_assert(SCORE_TILE * SCORE_TILE <= 1024 && SCORE_TILE % 2 == 0, "SCORE_TILE^2 threads at most 1024");
static_assert(SOFTMAX_BLOCK % 32 == 0 && (SOFTMAX_BLOCK & (SOFTMAX_BLOCK - 1)) == 0 && SOFTMAX_BLOCK <= 1024,
              "SOFTMAX_BLOCK: a power of two, a multiple of 32, at most 1024 (tree reduction)");
static_assert(PV_BX * PV_BY <= 1024 && PV_BX % 32 == 0, "PV block: whole warps along the head dim, at most 1024 threads");

#define NEG_INF (__int_as_float(0xff800000))

// grid = (ceil(S/SCORE_TILE), ceil(S/SCORE_TILE), B*H), block = (SCORE_TILE, SCORE_TILE)
extern "C" __global__ void __launch_bounds__(SCORE_TILE * SCORE_TILE)
attention_bf16_naive(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                  float* __restrict__ P, int B, int H, int S, int D, int causal)
{
    const int j = blockIdx.x * SCORE_TILE + threadIdx.x;   // key
    const int i = blockIdx.y * SCORE_TILE + threadIdx.y;   // query
    const long long bh = blockIdx.z;
    if (i >= S || j >= S) return;
    float* out = P + (bh * S + i) * S + j;
    if (causal && j > i) {
        *out = NEG_INF;
        return;
    }
    const __nv_bfloat16* q = Q + (bh * S + i) * D;
    const __nv_bfloat16* k = K + (bh * S + j) * D;
    float acc = 0.f;
    for (int d = 0; d < D; ++d) acc = fmaf(__bfloat162float(q[d]), __bfloat162float(k[d]), acc);
    *out = acc * rsqrtf((float)D);
}

// grid = (B*H*S) (one block per row of P), block = (SOFTMAX_BLOCK)
extern "C" __global__ void __launch_bounds__(SOFTMAX_BLOCK)
attn_naive_softmax(float* __restrict__ P, int B, int H, int S, int causal)
{
    __shared__ float red[SOFTMAX_BLOCK];
    const long long row = blockIdx.x;                      // = bh * S + i
    const int i = (int)(row % S);
    const int cols = causal ? i + 1 : S;                   // causal: entries past the diagonal are -inf -> 0
    float* p = P + row * S;
    const int tid = threadIdx.x;

    float m = NEG_INF;
    for (int j = tid; j < cols; j += SOFTMAX_BLOCK) m = fmaxf(m, p[j]);
    red[tid] = m;
    __syncthreads();
    for (int s = SOFTMAX_BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    float sum = 0.f;
    for (int j = tid; j < cols; j += SOFTMAX_BLOCK) sum += expf(p[j] - m);
    red[tid] = sum;
    __syncthreads();
    for (int s = SOFTMAX_BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    const float inv = 1.f / red[0];
    for (int j = tid; j < S; j += SOFTMAX_BLOCK) p[j] = (j < cols) ? expf(p[j] - m) * inv : 0.f;
}

// grid = (ceil(D/PV_BX), ceil(S/PV_BY), B*H), block = (PV_BX, PV_BY)
extern "C" __global__ void __launch_bounds__(PV_BX * PV_BY)
attn_naive_pv(const float* __restrict__ P, const __nv_bfloat16* __restrict__ V,
              __nv_bfloat16* __restrict__ O, int B, int H, int S, int D, int causal)
{
    const int d = blockIdx.x * PV_BX + threadIdx.x;
    const int i = blockIdx.y * PV_BY + threadIdx.y;
    const long long bh = blockIdx.z;
    if (i >= S || d >= D) return;
    const float* p = P + (bh * S + i) * S;
    const __nv_bfloat16* v = V + bh * S * D + d;
    const int cols = causal ? i + 1 : S;                   // the softmax wrote zeros past the diagonal
    float acc = 0.f;
    for (int j = 0; j < cols; ++j) acc = fmaf(p[j], __bfloat162float(v[(long long)j * D]), acc);
    O[(bh * S + i) * D + d] = __float2bfloat16_rn(acc);
}
