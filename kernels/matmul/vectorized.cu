// matmul / vectorized
// blocktile_2d plus 128-bit memory operations: global loads of A and B are float4, the A tile is
// stored TRANSPOSED in shared memory (As[k][m]) so a thread's TM values of A for one k are
// contiguous and come in with LDS.128 like B's TN values, and C is written with float4 stores.
// Same FLOPs as blocktile_2d with ~4x fewer load/store instructions.
// Expected limiter: shared-memory bank conflicts on the B reads, load latency (no overlap of
// global loads with compute), the two barriers per tile.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif

#define NUM_THREADS ((BM * BN) / (TM * TN))

static_assert(BM % TM == 0 && BN % TN == 0, "BM must be a multiple of TM and BN of TN");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "TM, TN and BK must be multiples of 4 (float4 paths)");
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "(BM*BN)/(TM*TN) threads: a multiple of 32, at most 1024");
static_assert((BM * BK / 4) % NUM_THREADS == 0, "A tile must split evenly into one or more float4 per thread");
static_assert((BK * BN / 4) % NUM_THREADS == 0, "B tile must split evenly into one or more float4 per thread");

// P[row][col .. col+3] of a row-major rows x cols matrix, zero outside it. col is a multiple of
// 4, so when cols % 4 == 0 (vec) the address is 16-byte aligned and one LDG.128 does it;
// otherwise (or at the matrix edge) fall back to guarded scalar loads.
static __device__ __forceinline__ float4 load4(const float* __restrict__ P, int row, int col,
                                               int rows, int cols, bool vec)
{
    if (vec && row < rows && col < cols)        // vec: col < cols implies col + 3 < cols
        return *reinterpret_cast<const float4*>(P + row * cols + col);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row < rows) {
        const float* p = P + row * cols;
        if (col + 0 < cols) v.x = p[col + 0];
        if (col + 1 < cols) v.y = p[col + 1];
        if (col + 2 < cols) v.z = p[col + 2];
        if (col + 3 < cols) v.w = p[col + 3];
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
matmul_vectorized(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK * BM];     // TRANSPOSED: As[k * BM + m]
    __shared__ __align__(16) float Bs[BK * BN];     // row-major:  Bs[k * BN + n]

    const int tid = threadIdx.x;
    const int threadCol = tid % (BN / TN);
    const int threadRow = tid / (BN / TN);
    const int cRow = blockIdx.y * BM;
    const int cCol = blockIdx.x * BN;

    // Uniform for the whole grid: may rows of A / B / C be read and written as float4?
    const bool vecA = (K % 4) == 0;
    const bool vecN = (N % 4) == 0;

    float acc[TM * TN] = {0.0f};
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < BM * BK / 4; i += NUM_THREADS) {
            const int idx = i + tid, r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
            const float4 v = load4(A, cRow + r, k0 + c, M, K, vecA);
            // transpose on the way into shared memory
            As[(c + 0) * BM + r] = v.x;
            As[(c + 1) * BM + r] = v.y;
            As[(c + 2) * BM + r] = v.z;
            As[(c + 3) * BM + r] = v.w;
        }
#pragma unroll
        for (int i = 0; i < BK * BN / 4; i += NUM_THREADS) {
            const int idx = i + tid, r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[r * BN + c]) = load4(B, k0 + r, cCol + c, K, N, vecN);
        }
        __syncthreads();

#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
            // Both fragments are now contiguous in shared memory: LDS.128 each.
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 a = *reinterpret_cast<const float4*>(&As[dot * BM + threadRow * TM + i]);
                regM[i] = a.x; regM[i + 1] = a.y; regM[i + 2] = a.z; regM[i + 3] = a.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 b = *reinterpret_cast<const float4*>(&Bs[dot * BN + threadCol * TN + j]);
                regN[j] = b.x; regN[j + 1] = b.y; regN[j + 2] = b.z; regN[j + 3] = b.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i * TN + j] += regM[i] * regN[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + threadRow * TM + i;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int col = cCol + threadCol * TN + j;
            float* c = C + row * N + col;
            if (vecN && col < N) {                  // aligned and (N % 4 == 0) fully inside
                *reinterpret_cast<float4*>(c) =
                    make_float4(acc[i * TN + j], acc[i * TN + j + 1], acc[i * TN + j + 2], acc[i * TN + j + 3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (col + q < N) c[q] = acc[i * TN + j + q];
            }
        }
    }
}
