// matmul / blocktile_2d
// Each thread computes a TM x TN register tile (an outer product per k) instead of the TM x 1
// column of blocktile_1d: per k it loads TM values of A and TN values of B into registers and
// does TM*TN FMAs, so shared-memory loads per FMA fall from ~1 to (TM+TN)/(TM*TN) = 1/4 at 8x8,
// and the larger 128x128 block tile halves global/L2 traffic per FLOP again.
// Expected limiter: scalar LDS issue and bank conflicts, and non-vectorized global loads.

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
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "(BM*BN)/(TM*TN) threads: a multiple of 32, at most 1024");
static_assert((BM * BK) % NUM_THREADS == 0, "A tile (BM*BK) must split evenly over the threads");
static_assert((BK * BN) % NUM_THREADS == 0, "B tile (BK*BN) must split evenly over the threads");

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
matmul_blocktile_2d(const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[BM * BK];               // row-major BM x BK
    __shared__ float Bs[BK * BN];               // row-major BK x BN

    const int tid = threadIdx.x;
    const int threadCol = tid % (BN / TN);      // this thread owns columns threadCol*TN .. +TN-1
    const int threadRow = tid / (BN / TN);      //            and rows    threadRow*TM .. +TM-1
    const int cRow = blockIdx.y * BM;
    const int cCol = blockIdx.x * BN;

    float acc[TM * TN] = {0.0f};
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < BM * BK; i += NUM_THREADS) {
            const int idx = i + tid, r = idx / BK, c = idx % BK;
            const int gr = cRow + r, gc = k0 + c;
            As[idx] = (gr < M && gc < K) ? A[gr * K + gc] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < BK * BN; i += NUM_THREADS) {
            const int idx = i + tid, r = idx / BN, c = idx % BN;
            const int gr = k0 + r, gc = cCol + c;
            Bs[idx] = (gr < K && gc < N) ? B[gr * N + gc] : 0.0f;
        }
        __syncthreads();

#pragma unroll
        for (int dot = 0; dot < BK; ++dot) {
            // Stage one column of the A sub-tile and one row of the B sub-tile in registers,
            // then a TM x TN outer product: TM+TN loads feed TM*TN FMAs.
#pragma unroll
            for (int i = 0; i < TM; ++i)
                regM[i] = As[(threadRow * TM + i) * BK + dot];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                regN[j] = Bs[dot * BN + threadCol * TN + j];
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
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = cCol + threadCol * TN + j;
            if (row < M && col < N)
                C[row * N + col] = acc[i * TN + j];
        }
    }
}
