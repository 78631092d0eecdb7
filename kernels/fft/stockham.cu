// fft / stockham
// Changed from fourstep: small blocks, radix-8 (or radix-4) Stockham autosort stages in registers,
// no staging of the signal through shared memory and no twiddle table. Same pass split as
// fourstep (n = R1·R2 with every R <= MAX_RADIX; one pass, one DRAM sweep, up to 2048 points) but
// a block holds only RADIX·T points (T threads, RADIX points each; T = THREADS unless the pass
// needs more: a whole column, and MIN_RUN columns side by side when n > MAX_RADIX): at
// 1024 x 65536 and THREADS = 128 a block is one signal in 8 KB of shared memory, so many blocks
// share an SM and one block's loads overlap the others' arithmetic.
// Stages: radix RADIX while RADIX points are left, then one radix-2 or radix-4 stage when
// log_RADIX(R) is not whole (1024 = 8·8·8·2 or 4^5). The first stage reads its RADIX points
// straight from global memory (point b + j·R/RADIX of its column: consecutive threads read
// consecutive addresses) and the last writes straight to global memory (X[b + j·R/rho], again
// consecutive); only the log_RADIX(R) - 1 exchanges in between go through shared memory, whose
// layout XOR-swizzles each aligned run of 16 points (conflict-free radix-8 writes at strides 1
// and 8, conflict-free contiguous reads).
// Twiddles (decimation in frequency, after each butterfly): sincospif of the exact argument
// -2·pp/L gives w = exp(-2πi·pp/L), one call per butterfly per stage; w^2..w^7 are products of
// two earlier powers in registers (depth <= 3 multiplies, a few ulp). Why not a table: an
// R-entry shared table costs R sincospif per 8 KB block and indexed reads that conflict; constant
// memory serialises different addresses in a warp. The inter-pass twiddle (n > MAX_RADIX only)
// is one sincospif per point, as in fourstep.
// Expected limiter: DRAM bandwidth (each point read once and written once per pass: one pass at
// n <= 2048), with issue of the butterflies and sincospif about half of it at 1024 points.

#ifndef THREADS
#define THREADS 128
#endif
#ifndef RADIX
#define RADIX 8
#endif
#ifndef MAX_RADIX
#define MAX_RADIX 2048
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 8  // blocks of THREADS an SM: caps registers at 65536 / (MINBLOCKS·THREADS) = 64
#endif

#define MAX_THREADS 1024  // the host widens a pass's block up to this (fft.py stockham_threads)
#define MIN_RUN 4         // columns side by side in a later pass's block: 4 x 8 B, one 32-byte sector

static_assert(RADIX == 4 || RADIX == 8, "RADIX: 4 or 8 (points per thread and the main stage radix)");
static_assert(THREADS >= 32 && THREADS <= MAX_THREADS && (THREADS & (THREADS - 1)) == 0,
              "THREADS must be a power of two, 32..1024");
static_assert(MAX_RADIX >= 2 && (MAX_RADIX & (MAX_RADIX - 1)) == 0 && MAX_RADIX <= 2048,
              "MAX_RADIX: a power of two, 2..2048 (kernels exist up to 2048)");

static __device__ __forceinline__ unsigned log2u(unsigned x) { return 31u - __clz(x); }  // x a power of two

static __host__ __device__ constexpr int log2c(int x) { return x <= 1 ? 0 : 1 + log2c(x / 2); }

// Shared-memory slot of point r of a column: inside each aligned run of 16 points the low bits are
// XORed with (run & 7) ^ 8·(run bit 2), so that radix-8 writes at stride 1 (8·b + j) and at
// stride 8 (q + 8j + 64p) hit 16 different 8-byte bank pairs per half-warp, and aligned runs of
// 16 (every read) stay a permutation of one 128-byte line. Radix 4 adds 4·(run & 3) so that its
// stride-4 writes (q + 4j + 16p) spread too. One copy for the host: fft.py stockham_slot.
static __device__ __forceinline__ unsigned slot(unsigned r)
{
    const unsigned run = r >> 4;
    unsigned x = (run & 7u) ^ ((run & 4u) << 1);
    if (RADIX == 4)
        x ^= (run & 3u) << 2;
    return r ^ x;
}

// Column stride in float2: R points plus one slot when a block holds several columns, so that the
// columns a warp reads side by side (the first and last stages of a later pass) start in
// different banks. One copy for the host: fft.py stockham_stride.
template <int R> static __device__ __forceinline__ unsigned column_stride(unsigned columns)
{
    return R + (columns > 1 && R >= 16 ? 1u : 0u);
}

static __device__ __forceinline__ float2 cmul(float2 a, float2 b)
{
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// exp(-2πi·num/2^lg): the argument -2·num·2^-lg is exact (2·num < 2^24, times a power of two).
static __device__ __forceinline__ float2 twiddle(unsigned num, unsigned lg)
{
    float sn, cs;
    sincospif(-(float)(2u * num) * __int_as_float((int)(127u - lg) << 23), &sn, &cs);
    return make_float2(cs, sn);
}

// cos(2πk/8); k is a constant once the loops are unrolled, so this folds to a literal.
static __host__ __device__ __forceinline__ constexpr float cos8(int k)
{
    const int a = k & 7;
    return a == 0 ? 1.0f : a == 1 || a == 7 ? 0.70710678118654752f : a == 2 || a == 6 ? 0.0f
         : a == 3 || a == 5 ? -0.70710678118654752f : -1.0f;
}

static __host__ __device__ __forceinline__ constexpr int bitrev(int k, int n)  // k's log2(n) bits reversed
{
    int r = 0;
    for (int top = n / 2; top >= 1; top /= 2, k >>= 1)
        r |= (k & 1) * top;
    return r;
}

// One radix-2 decimation-in-frequency level of an in-register DFT: butterflies at distance HALF,
// twiddles exp(-2πi·i/(2·HALF)) = exp(-2πi·k/8) (1 and -i need no multiply).
template <int N, int HALF> static __device__ __forceinline__ void dif_level(float2 (&a)[N])
{
    if constexpr (HALF >= 1) {
#pragma unroll
        for (int g = 0; g < N; g += 2 * HALF) {
#pragma unroll
            for (int i = 0; i < HALF; i++) {
                const float2 u = a[g + i], v = a[g + i + HALF];
                a[g + i] = make_float2(u.x + v.x, u.y + v.y);
                const int k = i * (8 / (2 * HALF));
                const float2 d = make_float2(u.x - v.x, u.y - v.y);
                if (k == 0)
                    a[g + i + HALF] = d;
                else if (k == 2)
                    a[g + i + HALF] = make_float2(d.y, -d.x);
                else
                    a[g + i + HALF] = cmul(d, make_float2(cos8(k), -cos8(k - 2)));
            }
        }
        dif_level<N, HALF / 2>(a);
    }
}

// In-register N-point DFT (N = 2, 4, 8), natural order in and out (the bit reversal of the DIF
// levels is resolved at compile time).
template <int N> static __device__ __forceinline__ void dft(float2 (&a)[N])
{
    dif_level<N, N / 2>(a);
    float2 b[N];
#pragma unroll
    for (int k = 0; k < N; k++)
        b[k] = a[bitrev(k, N)];
#pragma unroll
    for (int k = 0; k < N; k++)
        a[k] = b[k];
}

// a[j] *= w^j for j >= 1, w = exp(-2πi·num/2^lg): one sincospif, the powers as products of two
// earlier ones (w^k = w^(k/2)·w^(k - k/2)).
template <int N> static __device__ __forceinline__ void apply_twiddles(float2 (&a)[N], unsigned num, unsigned lg)
{
    float2 w[N];
    w[1] = twiddle(num, lg);
#pragma unroll
    for (int k = 2; k < N; k++)
        w[k] = cmul(w[k / 2], w[k - k / 2]);
#pragma unroll
    for (int k = 1; k < N; k++)
        a[k] = cmul(a[k], w[k]);
}

// The geometry of one pass (stride s, radix R) for this block; see fourstep.cu for the split.
struct Geometry {
    unsigned lgC;       // columns per block: C = T·RADIX/R
    unsigned stride;    // column stride in shared memory
    unsigned H, lgH;    // columns per signal (n/R)
    unsigned lgS, lgN;  // the pass stride s and n
    unsigned m;         // H/s: > 1 when the inter-pass twiddle applies
    unsigned columns;   // H·batch
    unsigned g0;        // the block's first column
    unsigned lgWin, lgWout;  // runs of consecutive columns in the first / last stage's thread map
};

// Thread map of a stage: butterfly beta of the block -> (column c, butterfly b of the column).
// The low lgW bits of beta pick one of W consecutive columns, so that a warp's global accesses are
// runs of W consecutive points (W = min(C, H) for loads, min(C, s) for stores; 1 inside).
template <int SPAN> static __device__ __forceinline__ void decode(unsigned beta, unsigned lgW, unsigned& c, unsigned& b)
{
    const unsigned hi = beta >> lgW;
    c = ((hi / SPAN) << lgW) | (beta & ((1u << lgW) - 1u));
    b = hi % SPAN;
}

// One Stockham DIF stage of every column of the block: radix RHO at stride ST. Butterfly b
// (qq = b mod ST, pp = b / ST) reads points b + j·SPAN, does the RHO-point DFT, multiplies output
// j by exp(-2πi·pp·j/(R/ST)) and writes it to point qq + ST·j + ST·RHO·pp. The first stage reads
// global memory, the last writes it (point k of column h = q + s·p goes to q + s·k + s·R·p, times
// exp(-2πi·p·k/(n/s)) when m > 1); the others go through shared memory.
template <int R, int ST>
static __device__ __forceinline__ void stages(const float2* __restrict__ in, float2* __restrict__ out,
                                              float2* data, const Geometry& G)
{
    constexpr int RHO = (R / ST) >= RADIX ? RADIX : R / ST;
    constexpr int PER = RADIX / RHO;  // butterflies per thread
    constexpr int SPAN = R / RHO;     // butterflies per column
    constexpr bool FIRST = ST == 1, LAST = ST * RHO == R;
    const unsigned lgW = FIRST ? G.lgWin : LAST ? G.lgWout : 0u;
    float2 a[PER][RHO];
#pragma unroll
    for (int v = 0; v < PER; v++) {
        unsigned c, b;
        decode<SPAN>(threadIdx.x + blockDim.x * v, lgW, c, b);
        if constexpr (FIRST) {
            const unsigned g = G.g0 + c;
            const bool valid = g < G.columns;
            const size_t base = ((size_t)(g >> G.lgH) << G.lgN) + (g & (G.H - 1u));
#pragma unroll
            for (int j = 0; j < RHO; j++)
                a[v][j] = valid ? in[base + ((size_t)(b + j * SPAN) << G.lgH)] : make_float2(0.f, 0.f);
        } else {
#pragma unroll
            for (int j = 0; j < RHO; j++)
                a[v][j] = data[c * G.stride + slot(b + j * SPAN)];
        }
    }
    if constexpr (!FIRST && !LAST)
        __syncthreads();  // every read of this stage before any write
#pragma unroll
    for (int v = 0; v < PER; v++) {
        unsigned c, b;
        decode<SPAN>(threadIdx.x + blockDim.x * v, lgW, c, b);
        dft<RHO>(a[v]);
        if constexpr (!LAST) {
            constexpr unsigned lgST = log2c(ST);
            const unsigned qq = b & (ST - 1), pp = b >> lgST;
            apply_twiddles<RHO>(a[v], pp, log2c(R / ST));  // exp(-2πi·pp·j/(R/ST))
#pragma unroll
            for (int j = 0; j < RHO; j++)
                data[c * G.stride + slot(qq + ST * j + ST * RHO * pp)] = a[v][j];
        } else {  // ST = R/RHO: pp = 0, qq = b
            const unsigned g = G.g0 + c;
            if (g < G.columns) {
                const unsigned h = g & (G.H - 1u), q = h & ((1u << G.lgS) - 1u), p = h >> G.lgS;
                const size_t base = ((size_t)(g >> G.lgH) << G.lgN) + q + ((size_t)p << (G.lgS + log2c(R)));
#pragma unroll
                for (int j = 0; j < RHO; j++) {
                    const unsigned k = b + ST * j;
                    float2 y = a[v][j];
                    if (G.m > 1)
                        y = cmul(y, twiddle(p * k, G.lgN - G.lgS));  // exp(-2πi·p·k/(n/s)); p·k < n/s
                    out[base + ((size_t)k << G.lgS)] = y;
                }
            }
        }
    }
    if constexpr (!LAST) {
        __syncthreads();  // every write of this stage before the next stage's reads
        stages<R, ST * RHO>(in, out, data, G);
    }
}

template <int R>
static __device__ __forceinline__ void stockham_pass(const float2* __restrict__ in, float2* __restrict__ out,
                                                     int n, int batch, int s)
{
    extern __shared__ float2 data[];
    const unsigned T = blockDim.x;
    Geometry G;
    G.lgC = log2u(T * RADIX) - log2c(R);
    const unsigned C = 1u << G.lgC;
    G.stride = column_stride<R>(C);
    unsigned provided;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(provided));
    if (T * RADIX < R || (R > RADIX && provided < C * G.stride * 8u))
        __trap();  // the host's block holds less than one column, or less shared memory than its layout
    G.H = (unsigned)n / R;
    G.lgH = log2u(G.H);
    G.lgS = log2u((unsigned)s);
    G.lgN = log2u((unsigned)n);
    G.m = G.H >> G.lgS;
    G.columns = G.H * (unsigned)batch;
    G.g0 = blockIdx.x * C;
    G.lgWin = min(G.lgC, G.lgH);
    G.lgWout = min(G.lgC, G.lgS);
    stages<R, 1>(in, out, data, G);
}

// One entry point per radix and kind of pass; fft.py picks them through the manifest's helpers:
// rR for a one-pass transform (n = R), wR for a pass of a longer signal. fft_stockham itself is
// the one-pass radix-1024 kernel, the whole transform at 1024 points. Each kernel's bound is the
// block the host gives it (fft.py stockham_threads) and keeps MINBLOCKS·THREADS threads an SM.
static __host__ __device__ constexpr int bound_threads(int R, int run)
{
    return THREADS > (R / RADIX * run < MAX_THREADS ? R / RADIX * run : MAX_THREADS)
         ? THREADS : (R / RADIX * run < MAX_THREADS ? R / RADIX * run : MAX_THREADS);
}
static __host__ __device__ constexpr int bound_blocks(int R, int run)
{
    return MINBLOCKS * THREADS / bound_threads(R, run) > 1 ? MINBLOCKS * THREADS / bound_threads(R, run) : 1;
}

static_assert(bound_threads(1024, 1) == THREADS, "THREADS*RADIX must hold one 1024-point signal (the bound of fft_stockham)");

extern "C" __global__ void __launch_bounds__(THREADS, MINBLOCKS)
fft_stockham(const float2* __restrict__ in, float2* __restrict__ out, int n, int batch, int s)
{
    stockham_pass<1024>(in, out, n, batch, s);
}

#define STOCKHAM_KERNEL(NAME, R, RUN)                                                                  \
    extern "C" __global__ void __launch_bounds__(bound_threads(R, RUN), bound_blocks(R, RUN))         \
    NAME(const float2* __restrict__ in, float2* __restrict__ out, int n, int batch, int s)              \
    {                                                                                                  \
        stockham_pass<R>(in, out, n, batch, s);                                                        \
    }
#define ONE_PASS(R) STOCKHAM_KERNEL(fft_stockham_r##R, R, 1)
#define LATER_PASS(R) STOCKHAM_KERNEL(fft_stockham_w##R, R, MIN_RUN)

ONE_PASS(2)
ONE_PASS(4)
ONE_PASS(8)
ONE_PASS(16)
ONE_PASS(32)
ONE_PASS(64)
ONE_PASS(128)
ONE_PASS(256)
ONE_PASS(512)
ONE_PASS(2048)
LATER_PASS(2)
LATER_PASS(4)
LATER_PASS(8)
LATER_PASS(16)
LATER_PASS(32)
LATER_PASS(64)
LATER_PASS(128)
LATER_PASS(256)
LATER_PASS(512)
LATER_PASS(1024)
LATER_PASS(2048)
