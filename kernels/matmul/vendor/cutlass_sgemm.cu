// The matmul family's CUTLASS row: CUTLASS's FP32 SIMT GEMM (cutlass::gemm::device::Gemm, the
// CUDA-core SGEMM the CUTLASS profiler lists as cutlass_simt_sgemm_*), row-major A, B and C, built by
// nvcc against CUTLASS's headers into a shared library (gpuprof/tools/nvcc_library.py) and called
// through ctypes on gpuprof's timing stream. CUTLASS is a template library with no run-time
// heuristic: the tile shape is a compile-time choice, so this file instantiates the SM80+ SIMT
// shapes the CUTLASS profiler generates for FP32 and gpuprof runs the fastest at the problem's size,
// as `cutlass_profiler --kernels=sgemm` would report it.
#include <cuda_runtime.h>

#include "cutlass/cutlass.h"
#include "cutlass/gemm/device/gemm.h"

namespace {

using RowMajor = cutlass::layout::RowMajor;
using Epilogue = cutlass::epilogue::thread::LinearCombination<float, 1, float, float>;

template <int TbM, int TbN, int WarpM, int WarpN, int Stages>
using SimtSgemm = cutlass::gemm::device::Gemm<
    float, RowMajor, float, RowMajor, float, RowMajor, float, cutlass::arch::OpClassSimt, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<TbM, TbN, 8>, cutlass::gemm::GemmShape<WarpM, WarpN, 8>,
    cutlass::gemm::GemmShape<1, 1, 1>, Epilogue, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>,
    Stages>;

template <typename Gemm>
int run(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
    typename Gemm::Arguments args({m, n, k}, {a, k}, {b, n}, {c, n}, {c, n}, {1.0f, 0.0f});
    Gemm gemm;
    if (gemm.can_implement(args) != cutlass::Status::kSuccess) return -1;
    // No split-K: the workspace is empty. initialize() opts the kernel into >48 KB of shared memory.
    if (gemm.initialize(args, nullptr, stream) != cutlass::Status::kSuccess) return -2;
    if (gemm(stream) != cutlass::Status::kSuccess) return -3;
    return static_cast<int>(cudaGetLastError());
}

using Launch = int (*)(const float*, const float*, float*, int, int, int, cudaStream_t);

// The CUTLASS profiler's SM80 SIMT FP32 tile descriptions (threadblock M×N×8, warps, stages) that fit
// 8 warps: the large tiles win at the course's sizes, the smaller ones fill the GPU on small problems.
struct Config {
    const char* name;
    Launch launch;
};
const Config kConfigs[] = {
    {"cutlass_simt_sgemm_256x128_8x5", run<SimtSgemm<256, 128, 64, 64, 5>>},
    {"cutlass_simt_sgemm_128x256_8x5", run<SimtSgemm<128, 256, 64, 64, 5>>},
    {"cutlass_simt_sgemm_128x128_8x5", run<SimtSgemm<128, 128, 32, 64, 5>>},
    {"cutlass_simt_sgemm_256x128_8x4", run<SimtSgemm<256, 128, 64, 64, 4>>},
    {"cutlass_simt_sgemm_128x128_8x4", run<SimtSgemm<128, 128, 32, 64, 4>>},
    {"cutlass_simt_sgemm_128x64_8x5", run<SimtSgemm<128, 64, 64, 32, 5>>},
};
constexpr int kConfigCount = sizeof(kConfigs) / sizeof(kConfigs[0]);

}  // namespace

extern "C" int gpuprof_cutlass_sgemm_configs() { return kConfigCount; }

extern "C" const char* gpuprof_cutlass_sgemm_name(int config) {
    return config >= 0 && config < kConfigCount ? kConfigs[config].name : "";
}

// C = A·B (row-major M×K by K×N) with tile configuration `config`; 0 on success, a cudaError_t, or
// -1/-2/-3 when CUTLASS refuses the problem, its initialisation or the launch.
extern "C" int gpuprof_cutlass_sgemm(int device, int config, const float* a, const float* b, float* c, int m,
                                     int n, int k, cudaStream_t stream) {
    if (config < 0 || config >= kConfigCount) return -1;
    cudaError_t status = cudaSetDevice(device);  // this library's runtime starts on device 0
    if (status != cudaSuccess) return static_cast<int>(status);
    return kConfigs[config].launch(a, b, c, m, n, k, stream);
}
