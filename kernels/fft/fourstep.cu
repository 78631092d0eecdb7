// fft / fourstep
// Changed from smem: few passes over global memory instead of log2(n). A signal of n points is
// split n = R1·R2 (·R3) with every R <= MAX_RADIX (the four-step / Bailey decomposition in
// Stockham form): n <= MAX_RADIX is one pass, up to MAX_RADIX^2 = 2^22 two passes, so the data
// crosses DRAM twice (read + write each time) instead of 20 times at n = 2^20.
// One pass (stride s = R1·...·R(i-1), radix R = Ri, H = n/R columns per signal, m = H/s):
// column (signal, h = q + s·p) holds the R points x[h + H·r]; its R-point DFT X[k], times the
// twiddle exp(-2πi·p·k/(n/s)), goes to y[q + s·k + s·R·p]. A block takes C = TILE/R consecutive
// columns, so its loads and stores are runs of min(C, H) and min(C, s) consecutive points (whole
// 32-byte sectors), staged through shared memory (padded: conflict-free column and row access).
// Inside the block each column's R-point FFT runs as Stockham stages of radix 16 (the last one
// 2, 4, 8 or 16) in registers: each thread holds 16 points, so R = 1024 takes 3 exchanges through
// shared memory. Twiddles: an R-entry table from sincospif (accurate to an ulp) for the stages,
// sincospif for the inter-pass twiddle (exact argument: 2·p·k < 2^23). Expected limiter: DRAM
// bandwidth, two sweeps (read + write) at n = 2^20 against cuFFT's own one or two.

#ifndef THREADS
#define THREADS 512
#endif
#ifndef MAX_RADIX
#define MAX_RADIX 2048
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 2  // two blocks an SM (2 x <= 86 KB of shared memory): caps registers at 64
#endif

#define POINTS 16                   // points per thread in every phase
#define TILE (POINTS * THREADS)     // points per block: C columns x R points

static_assert(THREADS >= 32 && THREADS <= 1024 && THREADS % 32 == 0, "THREADS must be whole warps, 32..1024");
static_assert((THREADS & (THREADS - 1)) == 0, "THREADS must be a power of two (TILE/R columns per block)");
static_assert(MAX_RADIX >= 2 && (MAX_RADIX & (MAX_RADIX - 1)) == 0 && MAX_RADIX <= 2048 && MAX_RADIX <= TILE,
              "MAX_RADIX: a power of two, 2..2048 (kernels exist up to 2048) and at most TILE = 16·THREADS");

// Shared-memory layout, one copy of the formula for the host: gpuprof/families/fft.py fourstep_smem_bytes.
// Column c starts at c·stride; point r sits at r + r/16 (a gap every 16 points, so radix-16
// writes at stride 16 fall in different banks). Columns of 32+ points get max(1, 16/columns)
// slots more, so that the columns x 16/columns points a half-warp loads or stores (runs of
// `columns` consecutive columns) fall in 16 different 8-byte bank pairs. The R-entry twiddle
// table comes first.
template <int R> struct Layout {
    static constexpr int columns = TILE / R;
    static constexpr int stride = R + R / 16 + (R >= 32 ? (columns < 16 ? 16 / columns : 1) : 0);
    static constexpr unsigned bytes = (unsigned)(R + columns * stride) * 8u;
};

static __device__ __forceinline__ int padded(int r) { return r + (r >> 4); }

// padded(base + STEP·j) for the j of an unrolled loop: when STEP is a multiple of 16 the gaps
// move by STEP/16 per step, so the address is padded(base) plus a constant (no shift per point).
template <int STEP> static __device__ __forceinline__ int padded_step(int base, int j)
{
    if constexpr (STEP % 16 == 0)
        return padded(base) + j * (STEP + STEP / 16);
    else
        return padded(base + STEP * j);
}

static __device__ __forceinline__ float2 cmul(float2 a, float2 b)
{
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// exp(-2πi·num/2^lg): the argument -2·num·2^-lg is exact (2·num < 2^24, times a power of two;
// a multiply, not a division with its slow-path call).
static __device__ __forceinline__ float2 twiddle(unsigned num, unsigned lg)
{
    float sn, cs;
    sincospif(-(float)(2u * num) * __int_as_float((int)(127u - lg) << 23), &sn, &cs);
    return make_float2(cs, sn);
}

// cos(2πk/16); k is a constant once the loops below are unrolled, so this folds to a literal.
static __host__ __device__ __forceinline__ constexpr float cos16(int k)
{
    const int a = (k & 15) > 8 ? 16 - (k & 15) : (k & 15);  // cos is even: a in 0..8
    const int b = a > 4 ? 8 - a : a;                         // cos(π - x) = -cos(x): b in 0..4
    const float v = b == 0 ? 1.0f : b == 1 ? 0.92387953251128674f : b == 2 ? 0.70710678118654752f
                  : b == 3 ? 0.38268343236508977f : 0.0f;
    return a > 4 ? -v : v;
}

static __host__ __device__ __forceinline__ constexpr int bitrev(int k, int n)  // k's log2(n) bits reversed
{
    int r = 0;
    for (int top = n / 2; top >= 1; top /= 2, k >>= 1)
        r |= (k & 1) * top;
    return r;
}

// One radix-2 decimation-in-frequency level of an in-register DFT: butterflies at distance HALF.
template <int N, int HALF> static __device__ __forceinline__ void dif_level(float2 (&a)[N])
{
    if constexpr (HALF >= 1) {
#pragma unroll
        for (int g = 0; g < N; g += 2 * HALF) {
#pragma unroll
            for (int i = 0; i < HALF; i++) {
                const float2 u = a[g + i], v = a[g + i + HALF];
                a[g + i] = make_float2(u.x + v.x, u.y + v.y);
                const int k = i * (16 / (2 * HALF));  // exp(-2πi·i/(2·HALF)) = exp(-2πi·k/16)
                const float2 d = make_float2(u.x - v.x, u.y - v.y);
                if (k == 0)  // 22 of radix-16's 32 twiddles are 1 or -i: no multiply (k is a constant here)
                    a[g + i + HALF] = d;
                else if (k == 4)
                    a[g + i + HALF] = make_float2(d.y, -d.x);
                else
                    a[g + i + HALF] = cmul(d, make_float2(cos16(k), -cos16(k - 4)));
            }
        }
        dif_level<N, HALF / 2>(a);
    }
}

// In-register N-point DFT (N = 2..16), natural order in and out: radix-2 decimation in frequency
// leaves X[k] in a[bitrev(k)]; the permutation is resolved at compile time.
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

// One Stockham stage of the in-block column FFT: radix RHO at stride ST (ST·RHO <= R). Butterfly
// b of column c reads points b + j·R/RHO and writes qq + ST·j + ST·RHO·pp (qq = b mod ST,
// pp = b / ST), times exp(-2πi·pp·j/(R/ST)) = tw[pp·j·ST].
template <int R, int ST> static __device__ __forceinline__ void stages(float2* data, const float2* tw)
{
    if constexpr (ST < R) {
        constexpr int RHO = (R / ST) >= 16 ? 16 : R / ST;
        constexpr int PER = POINTS / RHO;  // butterflies per thread
        constexpr int SPAN = R / RHO;      // butterflies per column
        float2 a[PER][RHO];
#pragma unroll
        for (int v = 0; v < PER; v++) {
            const int beta = threadIdx.x + THREADS * v, c = beta / SPAN, b = beta % SPAN;
#pragma unroll
            for (int j = 0; j < RHO; j++)
                a[v][j] = data[c * Layout<R>::stride + padded_step<SPAN>(b, j)];
        }
        __syncthreads();
#pragma unroll
        for (int v = 0; v < PER; v++) {
            const int beta = threadIdx.x + THREADS * v, c = beta / SPAN, b = beta % SPAN;
            const int qq = b % ST, pp = b / ST;
            dft<RHO>(a[v]);
#pragma unroll
            for (int j = 0; j < RHO; j++) {
                const float2 y = (ST * RHO == R || j == 0) ? a[v][j] : cmul(a[v][j], tw[pp * j * ST]);
                // ST = 1, RHO = 16: the 16 outputs sit in one gap-free run at padded(16·pp)
                const int at = (ST == 1 && RHO == 16) ? padded(16 * pp) + j : padded_step<ST>(qq + ST * RHO * pp, j);
                data[c * Layout<R>::stride + at] = y;
            }
        }
        __syncthreads();
        stages<R, ST * RHO>(data, tw);
    }
}

static __device__ __forceinline__ unsigned log2u(unsigned x) { return 31u - __clz(x); }  // x a power of two

template <int R>
static __device__ __forceinline__ void fourstep_pass(const float2* __restrict__ in, float2* __restrict__ out,
                                                     int n, int batch, int s)
{
        constexpr unsigned C = Layout<R>::columns;
    extern __shared__ float2 smem[];
    unsigned provided;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(provided));
    if (provided < Layout<R>::bytes)
        __trap();  // the host's launch gave less shared memory than this layout needs
    float2* tw = smem;       // tw[i] = exp(-2πi·i/R)
    float2* data = smem + R; // C columns of Layout<R>::stride

    const unsigned H = (unsigned)n / R, lgH = log2u(H);  // columns per signal = s·m
    const unsigned lgS = log2u((unsigned)s), lgN = log2u((unsigned)n);
    const unsigned m = H >> lgS;
    const unsigned columns = H * (unsigned)batch;
    const unsigned g0 = blockIdx.x * C;

    for (unsigned i = threadIdx.x; i < R; i += THREADS)
        tw[i] = twiddle(i, log2u(R));

    // Load: point e of the block is column c = sg·Cw + (e mod Cw), r = (e / Cw) mod R, so that
    // consecutive threads read consecutive addresses (runs of Cw = min(C, H) points).
    {
        const unsigned lgCw = min(log2u(C), lgH);
        float2 v[POINTS];
#pragma unroll
        for (unsigned u = 0; u < POINTS; u++) {
            const unsigned e = threadIdx.x + THREADS * u;
            const unsigned c = ((e >> lgCw) / R << lgCw) | (e & ((1u << lgCw) - 1));
            const unsigned r = (e >> lgCw) % R, g = g0 + c;
            const size_t at = ((size_t)(g >> lgH) << lgN) + (g & (H - 1)) + ((size_t)r << lgH);
            v[u] = g < columns ? in[at] : make_float2(0.f, 0.f);
        }
#pragma unroll
        for (unsigned u = 0; u < POINTS; u++) {
            const unsigned e = threadIdx.x + THREADS * u;
            const unsigned c = ((e >> lgCw) / R << lgCw) | (e & ((1u << lgCw) - 1));
            data[c * Layout<R>::stride + padded((e >> lgCw) % R)] = v[u];
        }
    }
    __syncthreads();

    stages<R, 1>(data, tw);

    // Store: point e is column c = rest·Qw + (e mod Qw), k = (e / Qw) mod R (Qw = min(C, s)):
    // consecutive threads write consecutive addresses q + s·k + s·R·p.
    {
        const unsigned lgQw = min(log2u(C), lgS);
#pragma unroll
        for (unsigned u = 0; u < POINTS; u++) {
            const unsigned e = threadIdx.x + THREADS * u;
            const unsigned c = ((e >> lgQw) / R << lgQw) | (e & ((1u << lgQw) - 1));
            const unsigned k = (e >> lgQw) % R, g = g0 + c;
            if (g >= columns)
                continue;
            const unsigned h = g & (H - 1), q = h & ((unsigned)s - 1), p = h >> lgS;
            float2 y = data[c * Layout<R>::stride + padded(k)];
            if (m > 1)
                y = cmul(y, twiddle(p * k, lgN - lgS));  // exp(-2πi·p·k/(n/s)); p·k < n/s
            out[((size_t)(g >> lgH) << lgN) + q + ((size_t)k << lgS) + ((size_t)p << (lgS + log2u(R)))] = y;
        }
    }
}

// One entry point per radix; fft.py picks them through the manifest's helpers (r2 ... r2048).
// fft_fourstep itself is the radix-1024 pass (both passes at the default 2^20). Radices above
// TILE (a small THREADS override) compile to a kernel that traps; the plan never launches them.
template <int R>
static __device__ __forceinline__ void fourstep_entry(const float2* __restrict__ in, float2* __restrict__ out,
                                                      int n, int batch, int s)
{
    if constexpr (R <= TILE)
        fourstep_pass<R>(in, out, n, batch, s);
    else
        __trap();
}

extern "C" __global__ void __launch_bounds__(THREADS, MINBLOCKS)
fft_fourstep(const float2* __restrict__ in, float2* __restrict__ out, int n, int batch, int s)
{
    fourstep_entry<1024>(in, out, n, batch, s);
}

#define FOURSTEP_KERNEL(R)                                                                             \
    extern "C" __global__ void __launch_bounds__(THREADS, MINBLOCKS)                                   \
    fft_fourstep_r##R(const float2* __restrict__ in, float2* __restrict__ out, int n, int batch, int s) \
    {                                                                                                  \
        fourstep_entry<R>(in, out, n, batch, s);                                                       \
    }

FOURSTEP_KERNEL(2)
FOURSTEP_KERNEL(4)
FOURSTEP_KERNEL(8)
FOURSTEP_KERNEL(16)
FOURSTEP_KERNEL(32)
FOURSTEP_KERNEL(64)
FOURSTEP_KERNEL(128)
FOURSTEP_KERNEL(256)
FOURSTEP_KERNEL(512)
FOURSTEP_KERNEL(2048)
