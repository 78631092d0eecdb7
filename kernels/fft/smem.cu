// fft / smem
// Changed from naive: the stages of a sub-FFT of up to TILE points run in shared memory, in one
// launch: a block loads its sub-FFT once, does log2(TILE) Stockham stages between two shared
// buffers (2 x TILE x 8 bytes = 32 KB), and writes the result once. Signals of n <= TILE are a
// single launch (one block per signal, coalesced). Above TILE, log2(n/TILE) global radix-2 stages
// (fft_smem_stage, the naive stage) first split each signal into s = n/TILE interleaved
// sub-FFTs at stride s, which fft_smem then finishes: its loads and stores are strided (one
// 8-byte element per 32-byte sector when s >= 4). Expected limiter: DRAM bandwidth of the global
// stages plus the strided tile pass (sector efficiency 25 %), not the arithmetic.

#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef TILE
#define TILE 2048
#endif

static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK must be whole warps, 32..1024");
static_assert(TILE >= 2 && (TILE & (TILE - 1)) == 0 && TILE <= 2048, "TILE: a power of two, 2..2048 (2 x TILE x 8 B of shared memory)");

static __device__ __forceinline__ float2 twiddled(float2 d, unsigned num, unsigned len)
{
    float sn, cs;
    sincospif(-(float)(2u * num) / (float)len, &sn, &cs);  // exp(-2πi·num/len); 2·num < len: exact
    return make_float2(d.x * cs - d.y * sn, d.x * sn + d.y * cs);
}

// One global Stockham radix-2 stage at stride s (the same butterfly as fft_naive).
extern "C" __global__ void __launch_bounds__(BLOCK)
fft_smem_stage(const float2* __restrict__ in, float2* __restrict__ out, int n, int batch, int s)
{
    const unsigned half = (unsigned)n / 2;
    const unsigned t = blockIdx.x * BLOCK + threadIdx.x;
    if (t >= half * (unsigned)batch)
        return;
    const unsigned signal = t / half, k = t % half;
    const unsigned q = k & ((unsigned)s - 1), p = k / (unsigned)s;
    const float2* x = in + (size_t)signal * n;
    float2* y = out + (size_t)signal * n;
    const float2 a = x[k], b = x[k + half];
    y[q + 2u * s * p] = make_float2(a.x + b.x, a.y + b.y);
    y[q + 2u * s * p + s] = twiddled(make_float2(a.x - b.x, a.y - b.y), p * (unsigned)s, (unsigned)n);
}

// One block per sub-FFT: block (signal, q) transforms the len = n/s points x[q + s·j] and writes
// X[k] to out[q + s·k] (where the Stockham recursion puts them).
extern "C" __global__ void __launch_bounds__(BLOCK)
fft_smem(const float2* __restrict__ in, float2* __restrict__ out, int n, int batch, int s)
{
    __shared__ float2 buf[2][TILE];
    const unsigned len = (unsigned)n / (unsigned)s;  // <= TILE, a power of two
    const unsigned signal = blockIdx.x / (unsigned)s, q = blockIdx.x % (unsigned)s;
    const float2* x = in + (size_t)signal * n + q;
    float2* y = out + (size_t)signal * n + q;
    const unsigned tid = threadIdx.x;

    for (unsigned j = tid; j < len; j += BLOCK)
        buf[0][j] = x[(size_t)j * s];
    __syncthreads();

    int src = 0;
    const unsigned half = len / 2;
    for (unsigned stride = 1; stride < len; stride *= 2) {  // local Stockham stages
        const float2* X = buf[src];
        float2* Y = buf[src ^ 1];
        for (unsigned k = tid; k < half; k += BLOCK) {
            const unsigned qq = k & (stride - 1), p = k / stride;
            const float2 a = X[k], b = X[k + half];
            Y[qq + 2u * stride * p] = make_float2(a.x + b.x, a.y + b.y);
            Y[qq + 2u * stride * p + stride] = twiddled(make_float2(a.x - b.x, a.y - b.y), p * stride, len);
        }
        __syncthreads();
        src ^= 1;
    }

    for (unsigned k = tid; k < len; k += BLOCK)
        y[(size_t)k * s] = buf[src][k];
}
