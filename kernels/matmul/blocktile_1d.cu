// matmul / blocktile_1d
// Each thread now computes TM elements of one column of C instead of one (smem_tiled had one).
// The B value it reads from shared memory is held in a register and reused for TM FMAs, so
// shared-memory loads per FMA drop from 2 to about (1 + 1/TM), and the block tile (BM x BN)
// is no longer tied to the thread count. Expected limiter: shared-memory load issue (still one
// LDS of A per FMA) and latency, with moderate occupancy.

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif

#define NUM_THREADS ((BM * BN) / TM)

static_assert(BM % TM == 0, "BM must be a multiple of TM (each thread owns TM rows of one column)");
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "BM*BN/TM threads: a multiple of 32, at most 1024");
static_assert((BM * BK) % NUM_THREADS == 0, "A tile (BM*BK) must split evenly over the threads");
static_assert((BK * BN) % NUM_THREADS == 0, "B tile (BK*BN) must split evenly over the threads");

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
matmul_blocktile_1d(const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[BM * BK];               // row-major BM x BK
    __shared__ float Bs[BK * BN];               // row-major BK x BN

    const int tid = threadIdx.x;
    const int threadCol = tid % BN;             // consecutive lanes -> consecutive columns
    const int threadRow = tid / BN;             // this thread owns rows threadRow*TM .. +TM-1
    const int cRow = blockIdx.y * BM;
    const int cCol = blockIdx.x * BN;

    float acc[TM] = {0.0f};

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Cooperative loads, zero-filled outside the matrices.
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
            const float b = Bs[dot * BN + threadCol];          // one load, reused TM times
#pragma unroll
            for (int i = 0; i < TM; ++i)                      // As read is a warp broadcast
                acc[i] += As[(threadRow * TM + i) * BK + dot] * b;
        }
        __syncthreads();
    }

    const int col = cCol + threadCol;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + threadRow * TM + i;
        if (row < M && col < N)
            C[row * N + col] = acc[i];
    }
}
