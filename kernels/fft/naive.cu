// fft / naive
// The first rung: a Stockham radix-2 FFT (autosorting: no bit-reversal pass), one launch per
// stage, log2(n) launches in all. Stage (s = 1, 2, 4, ...): thread t of a signal takes
// a = x[t] and b = x[t + n/2] (coalesced), writes a + b to y[q + 2sp] and (a - b)·w^p to
// y[q + 2sp + s], with q = t mod s, p = t / s, w = exp(-2πi·s/n). Twiddles come from sincospif
// (accurate to an ulp). Every stage reads and writes the whole batch in global memory, so n = 2^20
// costs 20 round trips through DRAM. Expected limiter: DRAM bandwidth, times log2(n) passes.

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK must be whole warps, 32..1024");

extern "C" __global__ void __launch_bounds__(BLOCK)
fft_naive(const float2* __restrict__ in, float2* __restrict__ out, int n, int batch, int s)
{
    const unsigned half = (unsigned)n / 2;
    const unsigned t = blockIdx.x * BLOCK + threadIdx.x;  // one butterfly of one signal
    if (t >= half * (unsigned)batch)
        return;
    const unsigned signal = t / half, k = t % half;
    const unsigned q = k & ((unsigned)s - 1), p = k / (unsigned)s;  // s is a power of two
    const float2* x = in + (size_t)signal * n;
    float2* y = out + (size_t)signal * n;

    const float2 a = x[k], b = x[k + half];
    float sn, cs;
    sincospif(-(float)(2u * p * (unsigned)s) / (float)n, &sn, &cs);  // exp(-2πi·p·s/n); 2ps < n: exact
    const float2 d = make_float2(a.x - b.x, a.y - b.y);
    y[q + 2u * s * p] = make_float2(a.x + b.x, a.y + b.y);
    y[q + 2u * s * p + s] = make_float2(d.x * cs - d.y * sn, d.x * sn + d.y * cs);
}
