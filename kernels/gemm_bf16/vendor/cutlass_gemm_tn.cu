// The tensor-core GEMM families' CUTLASS row: CUTLASS 3.x's Hopper GEMM (the CollectiveBuilder's
// TMA + wgmma warp-specialised kernels, the kind `cutlass_profiler` lists for this layout on an
// H100), C = A·Bᵀ with A M×K and B N×K both row-major (K-major: CUTLASS's "TN"), 16-bit in and out,
// FP32 accumulate. BF16 by default, FP16 with -DGEMM_ELEM_FP16 (gemm_fp16's row builds this file
// so). Built by nvcc for sm_90a against CUTLASS's headers into a shared library
// (gpuprof/tools/nvcc_library.py) and called through ctypes on gpuprof's timing stream. The tile
// shape and schedule are compile-time choices: the file instantiates a few the CUTLASS profiler
// generates for this layout, and gpuprof runs the fastest at the problem's size. One today: a
// cooperative 128×256×64 tile (two consumer warpgroups of 64×256) for the course's large sizes. The file
// costs ~50 s of nvcc on first use and a second configuration ~20 s more (docs/tensor-cores.md), so
// more are added only where they win at the course's sizes.
#include <cuda_runtime.h>

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

namespace {

using namespace cute;

#if GEMM_ELEM_FP16  // 0 or undefined: BF16
using Element = cutlass::half_t;
#define ELEM_NAME "f16"
#else
using Element = cutlass::bfloat16_t;
#define ELEM_NAME "bf16"
#endif
using Accumulator = float;
constexpr int kAlignment = 128 / cutlass::sizeof_bits<Element>::value;  // 16-byte rows: what TMA needs

// A: RowMajor M×K, B: ColumnMajor K×N (= N×K row-major), C/D: RowMajor M×N.
template <class Tile, class Cluster, class MainloopSchedule, class EpilogueSchedule>
struct HopperGemm {
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
        cutlass::epilogue::collective::EpilogueTileAuto, Accumulator, Accumulator,
        Element, cutlass::layout::RowMajor, kAlignment, Element, cutlass::layout::RowMajor, kAlignment,
        EpilogueSchedule>::CollectiveOp;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
        Element, cutlass::layout::RowMajor, kAlignment, Element, cutlass::layout::ColumnMajor, kAlignment,
        Accumulator, Tile, Cluster,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
        MainloopSchedule>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
    using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

template <class Gemm>
typename Gemm::Arguments arguments(int device, const Element* a, const Element* b, Element* c, int m, int n,
                                   int k)
{
    using Kernel = typename Gemm::GemmKernel;
    typename Kernel::StrideA sa{};
    typename Kernel::StrideB sb{};
    typename Kernel::StrideC sc{};
    typename Kernel::StrideD sd{};
    get<0>(sa) = k;  // (m, k, batch): K-major rows of A
    get<0>(sb) = k;  // (n, k, batch): K-major rows of B
    get<0>(sc) = n;  // (m, n, batch): row-major C
    get<0>(sd) = n;
    cutlass::KernelHardwareInfo hw;
    hw.device_id = device;
    hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(device);
    // beta = 0: the epilogue never reads its source (C is D, unread).
    return {cutlass::gemm::GemmUniversalMode::kGemm, {m, n, k, 1}, {a, sa, b, sb}, {{1.0f, 0.0f}, c, sc, c, sd}, hw};
}

template <class Gemm>
int workspace_bytes(int device, int m, int n, int k, size_t* bytes)
{
    auto args = arguments<Gemm>(device, nullptr, nullptr, nullptr, m, n, k);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) return -1;
    *bytes = Gemm::get_workspace_size(args);
    return 0;
}

// One adapter per configuration, initialised again only when the problem or the buffers change, so
// a timed launch is the kernel's launch alone (initialize() encodes the TMA descriptors on the host).
template <class Gemm>
int run(int device, const Element* a, const Element* b, Element* c, int m, int n, int k, void* workspace,
        cudaStream_t stream)
{
    static Gemm gemm;
    static const void* last[4] = {nullptr, nullptr, nullptr, nullptr};
    static int lastShape[4] = {-1, -1, -1, -1};
    const int shape[4] = {device, m, n, k};
    const void* buffers[4] = {a, b, c, workspace};
    bool same = true;
    for (int i = 0; i < 4; ++i) same = same && shape[i] == lastShape[i] && buffers[i] == last[i];
    if (!same) {
        auto args = arguments<Gemm>(device, a, b, c, m, n, k);
        if (gemm.can_implement(args) != cutlass::Status::kSuccess) return -1;
        if (gemm.initialize(args, workspace, stream) != cutlass::Status::kSuccess) return -2;
        for (int i = 0; i < 4; ++i) { lastShape[i] = shape[i]; last[i] = buffers[i]; }
    }
    if (gemm.run(stream) != cutlass::Status::kSuccess) return -3;
    return static_cast<int>(cudaGetLastError());
}

using Cooperative = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using CooperativeEpilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
// Two consumer warpgroups share each 128×256 tile (cooperative), a cluster of two along M shares B's loads.
using Coop128x256 = HopperGemm<Shape<_128, _256, _64>, Shape<_2, _1, _1>, Cooperative, CooperativeEpilogue>::Gemm;

using Launch = int (*)(int, const Element*, const Element*, Element*, int, int, int, void*, cudaStream_t);
using Workspace = int (*)(int, int, int, int, size_t*);
struct Config {
    const char* name;
    Launch launch;
    Workspace workspace;
};
const Config kConfigs[] = {
    {"cutlass3x_sm90_tensorop_gemm_" ELEM_NAME "_128x256x64_2x1x1_cooperative",
     run<Coop128x256>, workspace_bytes<Coop128x256>},
};
constexpr int kConfigCount = sizeof(kConfigs) / sizeof(kConfigs[0]);

}  // namespace

extern "C" int gpuprof_cutlass_gemm_configs() { return kConfigCount; }

extern "C" const char* gpuprof_cutlass_gemm_name(int config)
{
    return config >= 0 && config < kConfigCount ? kConfigs[config].name : "";
}

// The workspace configuration `config` needs at m×n×k, into *bytes; 0, or -1 when CUTLASS refuses the problem.
extern "C" int gpuprof_cutlass_gemm_workspace(int device, int config, int m, int n, int k, size_t* bytes)
{
    if (config < 0 || config >= kConfigCount) return -1;
    return kConfigs[config].workspace(device, m, n, k, bytes);
}

// C = A·Bᵀ with configuration `config`; 0 on success, a cudaError_t, or -1/-2/-3 when CUTLASS refuses
// the problem, its initialisation or the launch.
extern "C" int gpuprof_cutlass_gemm(int device, int config, const void* a, const void* b, void* c, int m, int n,
                                    int k, void* workspace, cudaStream_t stream)
{
    if (config < 0 || config >= kConfigCount) return -1;
    cudaError_t status = cudaSetDevice(device);  // this library's runtime starts on device 0
    if (status != cudaSuccess) return static_cast<int>(status);
    return kConfigs[config].launch(device, static_cast<const Element*>(a), static_cast<const Element*>(b),
                                   static_cast<Element*>(c), m, n, k, workspace, stream);
}
