// conv2d / im2col_cublas
// The im2col pass of `im2col_gemm` (col[n][(c,r,s)][(p,q)], zeros for the padding halo), then
// cuBLAS instead of the hand-written GEMM: plan() calls torch.bmm(w as K x CRS, col, out=y)
// with TF32 off, a strided-batched SGEMM over the N images straight into y. Changed from
// `im2col_gemm`: only the GEMM, so the gap between the two is the hand-written SGEMM's.
// Expected limiter: DRAM for im2col, FFMA issue inside cuBLAS.
// The entry keeps the family signature: plan() passes the column workspace in place of y (w unused).

#ifndef IM2COL_THREADS
#define IM2COL_THREADS 256   // one thread per (p, q)
#endif

static_assert(IM2COL_THREADS % 32 == 0 && IM2COL_THREADS <= 1024, "IM2COL_THREADS: a multiple of 32, at most 1024");

// col[n][kd][pq] = x[n][c][p + r - padH][q + s - padW] (0 outside), kd = (c*R + r)*S + s.
// grid = (ceil(PQ / IM2COL_THREADS), min(C, 65535), min(N, 65535)); y and z stride over the rest.
// A thread writes its pixel's R*S taps of one channel: R*S coalesced row stores, index math once.
// Each x element is read R*S times (from L1/L2); each col element is written once.
extern "C" __global__ void __launch_bounds__(IM2COL_THREADS)
conv2d_im2col_cublas(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                     int N, int C, int H, int W, int K, int R, int S)
{
    float* __restrict__ col = y;      // N * C*R*S * P*Q floats, allocated by plan()
    const int padH = (R - 1) / 2, padW = (S - 1) / 2;
    const int P = H + 2 * padH - R + 1, Q = W + 2 * padW - S + 1;
    const int PQ = P * Q, RS = R * S, KD = C * RS;
    const int pq = blockIdx.x * IM2COL_THREADS + threadIdx.x;
    if (pq >= PQ) return;
    const int p = pq / Q, q = pq - p * Q;
    for (int n = blockIdx.z; n < N; n += gridDim.z) {
        for (int c = blockIdx.y; c < C; c += gridDim.y) {
            // This thread's R x S window of x[n][c]; row kd = c*RS + r*S + s of col, column pq.
            const float* xc = x + (n * C + c) * H * W;
            float* cc = col + (n * KD + c * RS) * PQ + pq;
            for (int r = 0; r < R; ++r) {
                const int ih = p - padH + r;
                const bool rowIn = (unsigned)ih < (unsigned)H;
                for (int s = 0; s < S; ++s) {
                    const int iw = q - padW + s;
                    cc[(r * S + s) * PQ] = (rowIn && (unsigned)iw < (unsigned)W) ? xc[ih * W + iw] : 0.0f;
                }
            }
        }
    }
}
