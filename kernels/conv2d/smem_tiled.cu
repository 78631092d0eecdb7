// conv2d / smem_tiled
// Each block computes a TH x TW output tile of one image for KT filters (KT accumulators per
// thread). Per batch of input channels it stages the input tiles with their (R-1) x (S-1) halo
// and the filter slices w[k0..k0+KT)[c][r][s] in SHARED memory (not __constant__: a 256x256x3x3
// filter is 2.4 MB, and staging per slice is correct for any size); filters wider than FMAX are
// split into FMAX x FMAX chunks. Changed from `direct`: every x element is loaded once per block
// instead of once per (k, r, s), and each input value feeds KT FMAs from registers.
// Expected limiter: shared-memory load issue (1 LDS + KT/4 LDS.128 per KT FMAs), barriers.

#ifndef TW
#define TW 16          // output columns (q) per block = threadIdx.x extent
#endif
#ifndef TH
#define TH 16          // output rows (p) per block = threadIdx.y extent
#endif
#ifndef KT
#define KT 8           // filters per block; each thread keeps KT accumulators
#endif
#ifndef FMAX
#define FMAX 16        // filter taps per chunk along r and along s
#endif
#ifndef IN_SMEM
#define IN_SMEM 4096   // floats of shared memory for input tiles (a batch of channels)
#endif
#ifndef W_SMEM
#define W_SMEM 4096    // floats of shared memory for filter slices (the same channels)
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 4    // blocks per SM promised to the register allocator (64 registers at 256 threads)
#endif

static_assert(TW * TH % 32 == 0 && TW * TH <= 1024, "TW*TH threads: a multiple of 32, at most 1024");
static_assert(KT % 4 == 0, "KT must be a multiple of 4 (filter slices are read as float4)");
static_assert((TH + FMAX - 1) * (TW + FMAX - 1) <= IN_SMEM, "one channel's input tile with an FMAX halo must fit in IN_SMEM");
static_assert(FMAX * FMAX * KT <= W_SMEM, "one channel's FMAX x FMAX filter chunk for KT filters must fit in W_SMEM");
static_assert((IN_SMEM + W_SMEM) * 4 <= 48 * 1024, "input tiles and filter slices must fit in 48 KB of static shared memory");

extern "C" __global__ void __launch_bounds__(TW * TH, MINBLOCKS)
conv2d_smem_tiled(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                  int N, int C, int H, int W, int K, int R, int S)
{
    __shared__ float inS[IN_SMEM];                  // [ci][iy][ix], rows of inW floats
    __shared__ __align__(16) float wS[W_SMEM];      // [ci][rr][ss][kk]: KT filters of a tap together

    const int padH = (R - 1) / 2, padW = (S - 1) / 2;
    const int P = H + 2 * padH - R + 1, Q = W + 2 * padW - S + 1;   // = H, W for odd R, S
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TW + tx;
    const int q0 = blockIdx.x * TW, p0 = blockIdx.y * TH;
    const int kBlocks = (K + KT - 1) / KT;              // grid.z = kBlocks * N
    const int n = blockIdx.z / kBlocks, k0 = (blockIdx.z - n * kBlocks) * KT;

    float acc[KT];
#pragma unroll
    for (int kk = 0; kk < KT; ++kk)
        acc[kk] = 0.0f;

    for (int r0 = 0; r0 < R; r0 += FMAX) {
        const int rc = min(FMAX, R - r0);           // filter rows in this chunk
        const int inH = TH + rc - 1;
        const int gy0 = p0 - padH + r0;             // input row of tile row 0
        for (int s0 = 0; s0 < S; s0 += FMAX) {
            const int sc = min(FMAX, S - s0);
            const int inW = TW + sc - 1;
            const int gx0 = q0 - padW + s0;
            const int tileElems = inH * inW;
            const int taps = rc * sc;
            const int cb = min(IN_SMEM / tileElems, W_SMEM / (taps * KT));   // >= 1 (static_asserts)
            for (int c0 = 0; c0 < C; c0 += cb) {
                const int nc = min(cb, C - c0);
                __syncthreads();                    // the previous batch is no longer read
                // Input tiles of nc channels, zeros in the padding halo; threads walk rows along x.
                for (int row = ty; row < nc * inH; row += TH) {
                    const int ci = row / inH, gy = gy0 + row - ci * inH;
                    const bool rowIn = (unsigned)gy < (unsigned)H;
                    const float* xr = x + ((n * C + c0 + ci) * H + (rowIn ? gy : 0)) * W;
                    for (int ix = tx; ix < inW; ix += TW) {
                        const int gx = gx0 + ix;
                        inS[row * inW + ix] = (rowIn && (unsigned)gx < (unsigned)W) ? xr[gx] : 0.0f;
                    }
                }
                // Filter slices: element e = ((ci*taps + rr*sc + ss)*KT + kk); zeros for k >= K.
                for (int e = tid; e < nc * taps * KT; e += TW * TH) {
                    const int kk = e % KT, t = e / KT;
                    const int ci = t / taps, rs = t - ci * taps;
                    const int rr = rs / sc, ss = rs - rr * sc;
                    const int k = k0 + kk;
                    wS[e] = (k < K) ? w[((k * C + c0 + ci) * R + r0 + rr) * S + s0 + ss] : 0.0f;
                }
                __syncthreads();
                for (int ci = 0; ci < nc; ++ci) {
                    const float* in = &inS[ci * tileElems + ty * inW + tx];
                    const float* wt = &wS[ci * taps * KT];
                    for (int rr = 0; rr < rc; ++rr)
                        for (int ss = 0; ss < sc; ++ss) {
                            const float v = in[rr * inW + ss];
                            const float4* w4 = reinterpret_cast<const float4*>(wt + (rr * sc + ss) * KT);
#pragma unroll
                            for (int k4 = 0; k4 < KT / 4; ++k4) {
                                const float4 f = w4[k4];      // same address for the whole block: broadcast
                                acc[4 * k4 + 0] += v * f.x;
                                acc[4 * k4 + 1] += v * f.y;
                                acc[4 * k4 + 2] += v * f.z;
                                acc[4 * k4 + 3] += v * f.w;
                            }
                        }
                }
            }
        }
    }

    const int p = p0 + ty, q = q0 + tx;
    if (p < P && q < Q) {
#pragma unroll
        for (int kk = 0; kk < KT; ++kk)
            if (k0 + kk < K)
                y[((n * K + k0 + kk) * P + p) * Q + q] = acc[kk];
    }
}
