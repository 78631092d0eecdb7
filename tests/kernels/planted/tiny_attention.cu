// TEST DATA WITH PLANTED BUGS: not a shipped kernel. gpuprof's tests run it through
// `--kernels-dir tests/kernels/planted` to show that compute-sanitizer's racecheck catches the plant.
//
// A small single-pass attention forward on the CUDA cores: O = softmax(Q K^T / sqrt(D) [causal]) V,
// Q, K, V, O of shape (B, H, S, D), contiguous BF16, D <= 128; everything in FP32 inside.
// One block of 4 warps takes ROWS query rows of one (batch, head) (grid = (ceil(S / ROWS), B * H));
// each warp keeps ROWS / 4 of them. Per tile of 32 keys, all 128 threads stage K and V in shared
// memory (as FP32); then lane j scores key j against the warp's queries, the warp folds the 32
// scores into an online softmax (running maximum and sum), and lane l accumulates output dims
// l, l + 32, l + 64, l + 96 from the shared V tile. Simplicity over speed.
//
// The plant (compile-time, 0 or 1; the manifest's `defines` sets it):
//   PLANT_NO_BARRIER=1  drops the __syncthreads() after a tile's compute, so fast threads stage the
//                       next tile's K and V over the shared tile while slow warps still read it: a
//                       write-after-read race across warps (racecheck: a shared-memory hazard).

#include <cuda_bf16.h>

#ifndef PLANT_NO_BARRIER
#define PLANT_NO_BARRIER 0
#endif
#ifndef ROWS
#define ROWS 16        // query rows per block (the manifest's grid divides S by it)
#endif

#define TA_WARPS 4
#define TA_THREADS (TA_WARPS * 32)
#define TA_KEYS 32                     // keys per shared tile: one per lane
#define TA_DMAX 128
#define TA_QPW (ROWS / TA_WARPS)       // query rows per warp
#define TA_KSTRIDE (TA_DMAX + 1)       // K rows padded: lane j reading row j at one d hits bank (j + d) % 32
#define TA_MASKED (-1.0e30f)           // a masked score: exp() of it minus any real maximum is 0

static_assert(ROWS % TA_WARPS == 0, "ROWS must split evenly over the 4 warps");

extern "C" __global__ void __launch_bounds__(TA_THREADS)
attention_bf16_planted(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                    const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O,
                    int B, int H, int S, int D, int causal) {
    __shared__ float q_tile[ROWS][TA_DMAX];          // this block's queries, scaled by 1/sqrt(D)
    __shared__ float k_tile[TA_KEYS][TA_KSTRIDE];
    __shared__ float v_tile[TA_KEYS][TA_DMAX];

    const int tid = static_cast<int>(threadIdx.x);
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int first_query = static_cast<int>(blockIdx.x) * ROWS;
    const size_t head = static_cast<size_t>(blockIdx.y) * S * D;  // (batch, head) = blockIdx.y < B * H
    const float scale = rsqrtf(static_cast<float>(D));

    for (int idx = tid; idx < ROWS * D; idx += TA_THREADS) {
        const int r = idx / D;
        const int d = idx - r * D;
        const int query = first_query + r;
        q_tile[r][d] = query < S ? __bfloat162float(Q[head + static_cast<size_t>(query) * D + d]) * scale : 0.0f;
    }

    float run_max[TA_QPW];
    float run_sum[TA_QPW];
    float acc[TA_QPW][4];
#pragma unroll
    for (int r = 0; r < TA_QPW; ++r) {
        run_max[r] = TA_MASKED;
        run_sum[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[r][c] = 0.0f;
    }

    // keys past the block's last query are masked for all its rows under the causal mask
    const int key_end = causal ? min(S, first_query + ROWS) : S;
    for (int key0 = 0; key0 < key_end; key0 += TA_KEYS) {
        for (int idx = tid; idx < TA_KEYS * D; idx += TA_THREADS) {
            const int j = idx / D;
            const int d = idx - j * D;
            const int key = key0 + j;
            const bool in = key < S;
            k_tile[j][d] = in ? __bfloat162float(K[head + static_cast<size_t>(key) * D + d]) : 0.0f;
            v_tile[j][d] = in ? __bfloat162float(V[head + static_cast<size_t>(key) * D + d]) : 0.0f;
        }
        __syncthreads();  // the tile (and, the first time, the queries) visible to every warp

        // scores: lane j against key key0 + j, for each of this warp's query rows
        float score[TA_QPW];
#pragma unroll
        for (int r = 0; r < TA_QPW; ++r) score[r] = 0.0f;
        for (int d = 0; d < D; ++d) {
            const float kd = k_tile[lane][d];
#pragma unroll
            for (int r = 0; r < TA_QPW; ++r) score[r] = fmaf(q_tile[warp * TA_QPW + r][d], kd, score[r]);
        }

        const int key = key0 + lane;
#pragma unroll
        for (int r = 0; r < TA_QPW; ++r) {
            const int query = first_query + warp * TA_QPW + r;
            const bool keep = key < S && (!causal || key <= query);
            float s = keep ? score[r] : TA_MASKED;
            float tile_max = s;
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
            const float new_max = fmaxf(run_max[r], tile_max);
            const float rescale = __expf(run_max[r] - new_max);
            const float p = keep ? __expf(s - new_max) : 0.0f;
            float p_sum = p;
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) p_sum += __shfl_xor_sync(0xffffffffu, p_sum, off);
            run_sum[r] = run_sum[r] * rescale + p_sum;
            run_max[r] = new_max;
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[r][c] *= rescale;
            score[r] = p;  // this lane's probability for key key0 + lane, shared below by shuffles
        }

        // O += P V: lane l owns dims l + 32c; the probability of key j comes from lane j
        for (int j = 0; j < TA_KEYS; ++j) {
            float pj[TA_QPW];
#pragma unroll
            for (int r = 0; r < TA_QPW; ++r) pj[r] = __shfl_sync(0xffffffffu, score[r], j);
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int d = lane + 32 * c;
                if (d < D) {
                    const float v = v_tile[j][d];
#pragma unroll
                    for (int r = 0; r < TA_QPW; ++r) acc[r][c] = fmaf(pj[r], v, acc[r][c]);
                }
            }
        }
#if !PLANT_NO_BARRIER
        __syncthreads();  // every warp is done with this K/V tile before the next one is staged over it
#endif
    }

#pragma unroll
    for (int r = 0; r < TA_QPW; ++r) {
        const int query = first_query + warp * TA_QPW + r;
        if (query >= S) continue;
        const float inv = 1.0f / run_sum[r];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int d = lane + 32 * c;
            if (d < D) O[head + static_cast<size_t>(query) * D + d] = __float2bfloat16(acc[r][c] * inv);
        }
    }
    (void)B;
    (void)H;
}
