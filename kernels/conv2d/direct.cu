// conv2d / direct
// One thread per output element y[n][k][p][q] (flat index, q fastest, so a warp's x loads and y
// stores are consecutive along q): loop over c, r, s, skip taps in the padding halo, sum in a
// register. Every x element is fetched from L1/L2 once per (k, r, s) that uses it, every filter
// tap once per output pixel. Expected limiter: L1/LSU load throughput (two loads per FMA).

#ifndef THREADS
#define THREADS 256
#endif

static_assert(THREADS % 32 == 0 && THREADS <= 1024, "THREADS: a multiple of 32, at most 1024");

extern "C" __global__ void __launch_bounds__(THREADS)
conv2d_direct(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
              int N, int C, int H, int W, int K, int R, int S)
{
    const int padH = (R - 1) / 2, padW = (S - 1) / 2;
    const int P = H + 2 * padH - R + 1, Q = W + 2 * padW - S + 1;   // = H, W for odd R, S
    const int idx = blockIdx.x * THREADS + threadIdx.x;
    if (idx >= N * K * P * Q) return;
    const int q = idx % Q;
    int t = idx / Q;
    const int p = t % P;
    t /= P;
    const int k = t % K;
    const int n = t / K;

    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* xc = x + (n * C + c) * H * W;
        const float* wc = w + (k * C + c) * R * S;
        for (int r = 0; r < R; ++r) {
            const int ih = p - padH + r;
            if ((unsigned)ih >= (unsigned)H) continue;   // zero padding: the tap adds nothing
            for (int s = 0; s < S; ++s) {
                const int iw = q - padW + s;
                if ((unsigned)iw < (unsigned)W)
                    acc += xc[ih * W + iw] * wc[r * S + s];
            }
        }
    }
    y[idx] = acc;                                        // idx = ((n*K + k)*P + p)*Q + q
}
