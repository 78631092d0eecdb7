// mnist / hand
// The course's final project written with its own kernels: one SGD training step of the MNIST CNN
// (conv3x3 -> batchnorm (batch statistics) -> relu -> maxpool2x2, twice; linear -> relu -> linear;
// log-softmax + cross-entropy). gpuprof/families/mnist/hand_plan.py (plan "train_step") launches these in
// order; the GEMMs in between (conv as im2col + GEMM, the linear layers) are cuBLAS SGEMMs through
// CuPy, as the course's im2col_cublas conv does. Activations of the conv blocks are kept channel-major
// (C, N, H, W): each channel is one contiguous run for the batchnorm reductions and one GEMM row.
// The last pooling writes (N, C, 7, 7), the flattened layout the MLP reads.
// Expected limiter: at batch 64 launch gaps between ~30 short kernels; at 1024 the GEMMs and the
// per-channel batchnorm reductions (one block per channel).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef STATS_THREADS
#define STATS_THREADS 1024
#endif
#ifndef CLASSES
#define CLASSES 10
#endif

// col[(c*9 + r*3 + s)][(n*H + p)*W + q] = x[c][n][p + r - 1][q + s - 1] (zero outside): a 3x3,
// pad 1 im2col of a channel-major input x[C][N][H][W]. One thread per (c, n, p, q).
extern "C" __global__ void __launch_bounds__(THREADS)
mnist_im2col3x3(const float* __restrict__ x, float* __restrict__ col, int C, int N, int H, int W)
{
    const int M = N * H * W;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= C * M) return;
    const int c = i / M, m = i - c * M;
    const int q = m % W, p = (m / W) % H;
    const float* xc = x + (size_t)c * M + (m - p * W - q);  // image n of channel c
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int s = 0; s < 3; ++s) {
            const int h = p + r - 1, w = q + s - 1;
            col[(size_t)(c * 9 + r * 3 + s) * M + m] = (h >= 0 && h < H && w >= 0 && w < W) ? xc[h * W + w] : 0.0f;
        }
}

// dx[c][n][h][w] = sum over (r, s) of dcol[(c*9 + r*3 + s)][(n, h - r + 1, w - s + 1)]: the adjoint of
// mnist_im2col3x3 as a gather (no atomics). One thread per (c, n, h, w).
extern "C" __global__ void __launch_bounds__(THREADS)
mnist_col2im3x3(const float* __restrict__ dcol, float* __restrict__ dx, int C, int N, int H, int W)
{
    const int M = N * H * W;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= C * M) return;
    const int c = i / M, m = i - c * M;
    const int w = m % W, h = (m / W) % H;
    const int base = m - h * W - w;
    float acc = 0.0f;
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int s = 0; s < 3; ++s) {
            const int p = h - r + 1, q = w - s + 1;
            if (p >= 0 && p < H && q >= 0 && q < W)
                acc += dcol[(size_t)(c * 9 + r * 3 + s) * M + base + p * W + q];
        }
    dx[i] = acc;
}

template <int BLOCK>
__device__ float block_sum(float v, float* scratch)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < BLOCK / 32 ? scratch[threadIdx.x] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, offset);
        if (threadIdx.x == 0) scratch[0] = v;
    }
    __syncthreads();
    v = scratch[0];
    __syncthreads();  // scratch is reused by the next call
    return v;
}

// Batch statistics of one channel per block (training-mode batchnorm, biased variance as PyTorch):
// two passes over the channel's contiguous run y[c][0..M), the second on (v - mean) so the variance
// does not cancel. M is a multiple of 4 (N*H*W with even H, W). Named mnist_hand: it is the
// manifest's entry point (`gpuprof build` reports it); the plan launches every kernel of this file.
extern "C" __global__ void __launch_bounds__(STATS_THREADS)
mnist_hand(const float* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd, int M, float eps)
{
    __shared__ float scratch[32];
    const float4* yc = reinterpret_cast<const float4*>(y + (size_t)blockIdx.x * M);
    const int M4 = M / 4;
    float s = 0.0f;
    for (int i = threadIdx.x; i < M4; i += STATS_THREADS) {
        const float4 v = yc[i];
        s += (v.x + v.y) + (v.z + v.w);
    }
    const float mu = block_sum<STATS_THREADS>(s, scratch) / (float)M;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < M4; i += STATS_THREADS) {
        const float4 v = yc[i];
        const float a = v.x - mu, b = v.y - mu, c = v.z - mu, d = v.w - mu;
        ss += (a * a + b * b) + (c * c + d * d);
    }
    const float var = block_sum<STATS_THREADS>(ss, scratch) / (float)M;
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = mu;
        rstd[blockIdx.x] = 1.0f / sqrtf(var + eps);
    }
}

__device__ __forceinline__ int pooled_index(int c, int n, int po, int qo, int C, int N, int Ho, int Wo, int nchw)
{
    return nchw ? ((n * C + c) * Ho + po) * Wo + qo : ((c * N + n) * Ho + po) * Wo + qo;
}

// Batchnorm (batch statistics) -> relu -> 2x2 max pool, fused: one thread per pooled output reads its
// four conv outputs y[c][n][2po + i][2qo + j] and writes the max and which of the four it was
// (the first on ties, as PyTorch). out is (C, N, Ho, Wo), or (N, C, Ho, Wo) when nchw (the flatten).
extern "C" __global__ void __launch_bounds__(THREADS)
mnist_bn_relu_pool(const float* __restrict__ y, const float* __restrict__ mean, const float* __restrict__ rstd,
                   const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ out,
                   unsigned char* __restrict__ argmax, int C, int N, int H, int W, int nchw)
{
    const int Ho = H / 2, Wo = W / 2;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;  // (c, n, po, qo), channel-major
    if (i >= C * N * Ho * Wo) return;
    const int qo = i % Wo, po = (i / Wo) % Ho, n = (i / (Wo * Ho)) % N, c = i / (Wo * Ho * N);
    const float mu = mean[c], rs = rstd[c], g = gamma[c], b = beta[c];
    const float* yc = y + ((size_t)(c * N + n) * H + 2 * po) * W + 2 * qo;
    float best = 0.0f;
    int which = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const float v = fmaxf(g * ((yc[(k >> 1) * W + (k & 1)] - mu) * rs) + b, 0.0f);
        if (k == 0 || v > best) { best = v; which = k; }
    }
    out[pooled_index(c, n, po, qo, C, N, Ho, Wo, nchw)] = best;
    argmax[i] = (unsigned char)which;
}

// The gradient reaching one conv output through pool and relu: the pooled gradient at the argmax
// position of its window when the pre-relu value there was positive, else 0.
__device__ __forceinline__ float routed(float g, int k, int which, float pre) { return (k == which && pre > 0.0f) ? g : 0.0f; }

// Batchnorm backward, the reductions: dbeta[c] = sum dy, dgamma[c] = sum dy * xhat over the channel,
// dy the gradient routed back through pool and relu. Only the argmax position of a window carries
// a gradient, so one block per channel walks the pooled outputs.
extern "C" __global__ void __launch_bounds__(STATS_THREADS)
mnist_bn_backward_reduce(const float* __restrict__ y, const float* __restrict__ mean, const float* __restrict__ rstd,
                         const float* __restrict__ gamma, const float* __restrict__ beta,
                         const unsigned char* __restrict__ argmax, const float* __restrict__ dpool,
                         float* __restrict__ dgamma, float* __restrict__ dbeta, int C, int N, int H, int W, int nchw)
{
    __shared__ float scratch[32];
    const int c = blockIdx.x, Ho = H / 2, Wo = W / 2, per_channel = N * Ho * Wo;
    const float mu = mean[c], rs = rstd[c], g = gamma[c], b = beta[c];
    float sdy = 0.0f, sdyx = 0.0f;
    for (int j = threadIdx.x; j < per_channel; j += STATS_THREADS) {
        const int qo = j % Wo, po = (j / Wo) % Ho, n = j / (Wo * Ho);
        const int which = argmax[c * per_channel + j];
        const float v = y[((size_t)(c * N + n) * H + 2 * po + (which >> 1)) * W + 2 * qo + (which & 1)];
        const float xhat = (v - mu) * rs;
        const float dy = routed(dpool[pooled_index(c, n, po, qo, C, N, Ho, Wo, nchw)], which, which, g * xhat + b);
        sdy += dy;
        sdyx += dy * xhat;
    }
    sdy = block_sum<STATS_THREADS>(sdy, scratch);
    sdyx = block_sum<STATS_THREADS>(sdyx, scratch);
    if (threadIdx.x == 0) {
        dbeta[c] = sdy;
        dgamma[c] = sdyx;
    }
}

// Batchnorm backward, the input gradient: dx = gamma * rstd * (dy - sum(dy)/M - xhat * sum(dy*xhat)/M),
// written channel-major dx[c][n][h][w] (the next GEMMs' layout). One thread per pooled output, its
// four conv outputs.
extern "C" __global__ void __launch_bounds__(THREADS)
mnist_bn_backward_dx(const float* __restrict__ y, const float* __restrict__ mean, const float* __restrict__ rstd,
                     const float* __restrict__ gamma, const float* __restrict__ beta,
                     const unsigned char* __restrict__ argmax, const float* __restrict__ dpool,
                     const float* __restrict__ dgamma, const float* __restrict__ dbeta, float* __restrict__ dx,
                     int C, int N, int H, int W, int nchw)
{
    const int Ho = H / 2, Wo = W / 2;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= C * N * Ho * Wo) return;
    const int qo = i % Wo, po = (i / Wo) % Ho, n = (i / (Wo * Ho)) % N, c = i / (Wo * Ho * N);
    const float inv_m = 1.0f / (float)(N * H * W);
    const float mu = mean[c], rs = rstd[c], g = gamma[c], b = beta[c];
    const float mean_dy = dbeta[c] * inv_m, mean_dyx = dgamma[c] * inv_m;
    const float gp = dpool[pooled_index(c, n, po, qo, C, N, Ho, Wo, nchw)];
    const int which = argmax[i];
    const size_t at = ((size_t)(c * N + n) * H + 2 * po) * W + 2 * qo;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const size_t e = at + (k >> 1) * W + (k & 1);
        const float xhat = (y[e] - mu) * rs;
        const float dy = routed(gp, k, which, g * xhat + b);
        dx[e] = g * rs * (dy - mean_dy - xhat * mean_dyx);
    }
}

// a[n][f] = max(z[n][f] + bias[f], 0): the first linear layer's bias and relu. One thread per element.
extern "C" __global__ void __launch_bounds__(THREADS)
mnist_bias_relu(const float* __restrict__ z, const float* __restrict__ bias, float* __restrict__ a, int N, int F)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N * F) return;
    a[i] = fmaxf(z[i] + bias[i % F], 0.0f);
}

// Backward of bias + relu: dz[n][f] = da[n][f] where a[n][f] > 0, and dbias[f] = sum over n of dz.
// Block (32 columns, 32 row groups); the row groups' partial sums meet in shared memory.
extern "C" __global__ void __launch_bounds__(1024)
mnist_relu_bias_backward(const float* __restrict__ da, const float* __restrict__ a, float* __restrict__ dz,
                         float* __restrict__ dbias, int N, int F)
{
    __shared__ float partial[32][33];
    const int f = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (f < F)
        for (int n = threadIdx.y; n < N; n += 32) {
            const float v = a[n * F + f] > 0.0f ? da[n * F + f] : 0.0f;
            dz[n * F + f] = v;
            s += v;
        }
    partial[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && f < F) {
        float t = 0.0f;
        for (int k = 0; k < 32; ++k) t += partial[k][threadIdx.x];
        dbias[f] = t;
    }
}

// Log-softmax + cross-entropy (mean over the batch) and its gradient, in one block:
// logits = z + bias; loss = mean over n of -(l[y] - max - log(sum exp(l - max)));
// dz[n][j] = (softmax_j - [j == y]) / N; dbias[j] = sum over n of dz[n][j].
extern "C" __global__ void __launch_bounds__(THREADS)
mnist_softmax_xent(const float* __restrict__ z, const float* __restrict__ bias, const long long* __restrict__ labels,
                   float* __restrict__ dz, float* __restrict__ loss, float* __restrict__ dbias, int N)
{
    __shared__ float scratch[32];
    __shared__ float partial[CLASSES][THREADS + 1];
    float acc[CLASSES];
#pragma unroll
    for (int j = 0; j < CLASSES; ++j) acc[j] = 0.0f;
    float lsum = 0.0f;
    const float inv_n = 1.0f / (float)N;
    for (int n = threadIdx.x; n < N; n += THREADS) {
        float l[CLASSES];
        float mx = -__int_as_float(0x7f800000);
#pragma unroll
        for (int j = 0; j < CLASSES; ++j) {
            l[j] = z[n * CLASSES + j] + bias[j];
            mx = fmaxf(mx, l[j]);
        }
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < CLASSES; ++j) s += expf(l[j] - mx);
        const int y = (int)labels[n];
        const float logs = logf(s);
        float ly = 0.0f;
#pragma unroll
        for (int j = 0; j < CLASSES; ++j) {
            if (j == y) ly = l[j];
            const float d = (expf(l[j] - mx) / s - (j == y ? 1.0f : 0.0f)) * inv_n;
            dz[n * CLASSES + j] = d;
            acc[j] += d;
        }
        lsum += -(ly - mx - logs);
    }
#pragma unroll
    for (int j = 0; j < CLASSES; ++j) partial[j][threadIdx.x] = acc[j];
    lsum = block_sum<THREADS>(lsum, scratch);  // its __syncthreads also publishes partial[][]
    if (threadIdx.x < CLASSES) {
        float t = 0.0f;
        for (int k = 0; k < THREADS; ++k) t += partial[threadIdx.x][k];
        dbias[threadIdx.x] = t;
    }
    if (threadIdx.x == 0) loss[0] = lsum * inv_n;
}

// Plain SGD, out of place: w[i] = w0[i] - lr * g[i] over the whole flat parameter buffer (every layer).
extern "C" __global__ void __launch_bounds__(THREADS)
mnist_sgd(const float* __restrict__ w0, const float* __restrict__ g, float* __restrict__ w, float lr, int P)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < P) w[i] = w0[i] - lr * g[i];
}
