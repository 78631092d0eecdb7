// attention_bf16 / online
// Changed from naive: one fused pass, no S×S workspace (FlashAttention's tiling on the CUDA cores,
// FP32 FMAs, no tensor cores). A block owns BR query rows of one (b, h); KV tiles of BC keys are
// staged in shared memory converted to float. GROUP adjacent lanes share one query row: each
// holds D/GROUP of the row's q (pre-scaled by D^-1/2·log2 e) and of its FP32 accumulator, in
// interleaved float4 slices so the group's shared-memory reads are consecutive. Per chunk of KC
// keys: partial dot products, a shuffle reduction across the group, then the online softmax
// (running max m and sum l, acc and l rescaled by exp2(m_old - m_new) once per chunk, as in
// FlashAttention) and acc += p · v. Any head dim up to DMAX (zero-padded slices).
// Expected limiter: FP32 issue on the CUDA cores (2·D FFMA per score spread over the group) and
// the shared-memory reads feeding them; the shuffle reduction and exp2 are a smaller share.
#include <cuda_bf16.h>

#ifndef NUM_THREADS
#define NUM_THREADS 128
#endif
#ifndef GROUP
#define GROUP 4            // lanes per query row
#endif
#ifndef BC
#define BC 32              // keys per shared-memory tile
#endif
#ifndef KC
#define KC 8               // keys per online-softmax update (scores held in registers)
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 2        // blocks per SM promised to the register allocator (without it ptxas caps at 128 and spills)
#endif
#ifndef DMAX
#define DMAX 128           // largest head dim; D <= 64 takes the DMAX/2 instantiation
#endif

#define BR (NUM_THREADS / GROUP)                 // query rows per block
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "NUM_THREADS: whole warps, at most 1024");
static_assert(GROUP == 1 || GROUP == 2 || GROUP == 4 || GROUP == 8 || GROUP == 16 || GROUP == 32,
              "GROUP: a power of two dividing the warp");
static_assert(DMAX % (8 * GROUP) == 0, "each lane of a group must own whole float4 slices at DMAX and DMAX/2");
static_assert(BC % KC == 0, "a tile must be a whole number of KC chunks");
static_assert(2 * BC * DMAX * 4 <= 48 * 1024, "the K and V tiles (float) must fit in 48 KB of static shared memory");

#define NEG_INF (__int_as_float(0xff800000))

template <int DP>  // DP: padded head dim (a multiple of 4*GROUP), D <= DP
static __device__ __forceinline__ void online_body(const __nv_bfloat16* __restrict__ Q,
                                                   const __nv_bfloat16* __restrict__ K,
                                                   const __nv_bfloat16* __restrict__ V,
                                                   __nv_bfloat16* __restrict__ O, int S, int D, int causal,
                                                   float (*Ks)[DP], float (*Vs)[DP])
{
    constexpr int NV = DP / (4 * GROUP);     // float4 slices per lane

    const int tid = threadIdx.x;
    const int g = tid % GROUP;                // lane within the row's group
    const int q0 = blockIdx.x * BR;
    const int i = q0 + tid / GROUP;           // this thread's query row
    const long long base = (long long)blockIdx.y * S * D;
    const bool rowOk = i < S;
    const float scaleLog2 = rsqrtf((float)D) * 1.4426950408889634f;

    // q slice: dims (v*GROUP + g)*4 + c, scaled into log2 units; zero past D or past S.
    float4 q[NV], acc[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        float t[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int d = (v * GROUP + g) * 4 + c;
            t[c] = (rowOk && d < D) ? __bfloat162float(Q[base + (long long)i * D + d]) * scaleLog2 : 0.f;
        }
        q[v] = make_float4(t[0], t[1], t[2], t[3]);
        acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    float m = -1e30f;   // finite: exp2(m_old - m_new) never sees -inf - -inf
    float l = 0.f;

    const int kvEnd = causal ? min(S, q0 + BR) : S;
    for (int kv0 = 0; kv0 < kvEnd; kv0 += BC) {
        __syncthreads();                      // the previous tile is no longer read
        for (int e = tid; e < BC * DP; e += NUM_THREADS) {
            const int r = e / DP, d = e % DP;
            const int j = kv0 + r;
            const bool ok = (j < S) && (d < D);
            const long long src = base + (long long)j * D + d;
            Ks[r][d] = ok ? __bfloat162float(K[src]) : 0.f;
            Vs[r][d] = ok ? __bfloat162float(V[src]) : 0.f;
        }
        __syncthreads();

#pragma unroll 1
        for (int jc = 0; jc < BC; jc += KC) {
            if (kv0 + jc >= kvEnd) break;     // block-uniform
            float s[KC];
#pragma unroll
            for (int k = 0; k < KC; ++k) {
                float a = 0.f;
#pragma unroll
                for (int v = 0; v < NV; ++v) {
                    const float4 kk = *reinterpret_cast<const float4*>(&Ks[jc + k][(v * GROUP + g) * 4]);
                    a = fmaf(q[v].x, kk.x, a);
                    a = fmaf(q[v].y, kk.y, a);
                    a = fmaf(q[v].z, kk.z, a);
                    a = fmaf(q[v].w, kk.w, a);
                }
                s[k] = a;
            }
#pragma unroll
            for (int k = 0; k < KC; ++k) {
#pragma unroll
                for (int off = 1; off < GROUP; off <<= 1) s[k] += __shfl_xor_sync(0xffffffffu, s[k], off);
                const int j = kv0 + jc + k;
                if (j >= S || (causal && j > i)) s[k] = NEG_INF;
            }
            float mx = m;
#pragma unroll
            for (int k = 0; k < KC; ++k) mx = fmaxf(mx, s[k]);
            const float alpha = exp2f(m - mx);
            m = mx;
            l *= alpha;
#pragma unroll
            for (int v = 0; v < NV; ++v) {
                acc[v].x *= alpha; acc[v].y *= alpha; acc[v].z *= alpha; acc[v].w *= alpha;
            }
#pragma unroll
            for (int k = 0; k < KC; ++k) {
                const float p = exp2f(s[k] - m);   // masked: exp2(-inf) = 0
                l += p;
#pragma unroll
                for (int v = 0; v < NV; ++v) {
                    const float4 vv = *reinterpret_cast<const float4*>(&Vs[jc + k][(v * GROUP + g) * 4]);
                    acc[v].x = fmaf(p, vv.x, acc[v].x);
                    acc[v].y = fmaf(p, vv.y, acc[v].y);
                    acc[v].z = fmaf(p, vv.z, acc[v].z);
                    acc[v].w = fmaf(p, vv.w, acc[v].w);
                }
            }
        }
    }

    if (!rowOk) return;
    const float inv = 1.f / l;                // l >= 1: the row's max contributes exp2(0)
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        const float t[4] = {acc[v].x, acc[v].y, acc[v].z, acc[v].w};
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int d = (v * GROUP + g) * 4 + c;
            if (d < D) O[base + (long long)i * D + d] = __float2bfloat16_rn(t[c] * inv);
        }
    }
}

// grid = (ceil(S/BR), B*H) with BR = NUM_THREADS/GROUP (= 32), block = (NUM_THREADS) (= 128).
// Head dims 1..DMAX; D <= DMAX/2 uses the half-width instantiation. Larger D: nothing is written.
extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINBLOCKS)
attention_bf16_online(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                 const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O,
                 int B, int H, int S, int D, int causal)
{
    __shared__ __align__(16) float Ks[BC * DMAX];   // one buffer, viewed as [BC][DP]
    __shared__ __align__(16) float Vs[BC * DMAX];
    if (D <= DMAX / 2)
        online_body<DMAX / 2>(Q, K, V, O, S, D, causal, reinterpret_cast<float(*)[DMAX / 2]>(Ks),
                              reinterpret_cast<float(*)[DMAX / 2]>(Vs));
    else if (D <= DMAX)
        online_body<DMAX>(Q, K, V, O, S, D, causal, reinterpret_cast<float(*)[DMAX]>(Ks),
                          reinterpret_cast<float(*)[DMAX]>(Vs));
}
