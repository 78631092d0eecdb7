"""The user's kernels first (issue 38): names classified as a library's or the user's, and the kernels
`gpuprof profile` hands to ncu chosen from recorded timelines and small synthetic kernel lists."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpuprof.analysis.kernel_choice import choose
from gpuprof.analysis.kernel_origin import LIBRARY, USER, origin
from gpuprof.commands.nsys_torch_fallback import trace_summary
from gpuprof.parsers.nsys_stats import NsysKernelSummary

TOOLS = Path(__file__).resolve().parents[1] / "fixtures" / "tools"


def kernel(name: str, pct: float) -> NsysKernelSummary:
    return NsysKernelSummary(name=name, time_pct=pct, total_ns=pct * 1000, instances=1, avg_ns=pct * 1000,
                             med_ns=pct * 1000, min_ns=pct * 1000, max_ns=pct * 1000, stddev_ns=0.0)


@pytest.mark.parametrize("name", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
     "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"),
    "void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4>(long, at::PhiloxCudaState)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float>>>(T3)",
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, int)",
    "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<int>(int)",
    "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(T1::Params)",
    "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_128x128_32x3_nhwc_align8>(T1)",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel",
    "ampere_sgemm_128x64_nn", "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT",
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>(float)",
    "std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int, float, float, float, float>(int)",
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float>(int)",
    "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false>(int)",
    "void thrust::cuda_cub::core::_kernel_agent<int>(int)", "cupy_copy__float64_float32",
    "void init_curand<curand_pseudo_state<curandStateXORWOW> >(long, unsigned long, long)",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<int>::Params)",
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>(Flash_fwd_params)",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_T1_",
])
def test_library_kernels(name):
    assert origin(name) == LIBRARY


@pytest.mark.parametrize("name", [
    "softmax_kernel",  # Triton: the Python function's name
    "triton_poi_fused_add_mul_0",  # torch.compile's Inductor, generated from the user's model
    "vecadd_grid",  # a CuPy RawKernel compiled by NVRTC
    "matmul_tiled(const float *, const float *, float *, int)",  # the user's binary
    "void sgemm_warptiling<128, 128, 16>(int, int, int, float, float *, float *, float, float *)",
    "void myext::fused_gelu_kernel<c10::Half>(c10::Half *, const c10::Half *, long)",  # an extension
    "void (anonymous namespace)::my_helper_kernel(float *)",
    "_Z12matmul_naivePKfS0_Pfi",
])
def test_user_kernels(name):
    assert origin(name) == USER


def test_a_recorded_pytorch_timeline_is_all_library_but_a_fusion():
    """A public nsys cuda_gpu_kern_sum of a PyTorch model: every ATen, cuBLAS, cuDNN, CUTLASS, CUB and
    FlashAttention kernel is a library's; the TorchScript fusion generated from the model is the user's."""
    with (TOOLS / "nsys_public_llmperfopt_cuda_gpu_kern_sum.csv").open() as f:
        names = [row["Name"] for row in csv.DictReader(f)]
    assert len(names) > 50
    assert [n for n in names if origin(n) == USER] == ["fused__autocast_to__12152488584593855096"]


def test_the_recorded_cupy_timeline_keeps_the_users_kernel_within_a_small_top():
    """H100 trace: cuRAND set-up (64 %) and CuPy's own copies and arithmetic around the user's NVRTC
    kernel vecadd_grid (7 %). With two slots the largest library kernel and vecadd_grid go to ncu
    (by time alone, cupy_multiply would have taken vecadd_grid's place); with one, vecadd_grid."""
    kernels = trace_summary(TOOLS / "torch-2.11.0__vecadd-grid.trace.json", "vecadd").kernels
    assert kernels is not None
    by_time = [k.name for k in sorted(kernels, key=lambda k: -k.total_ns)]
    assert by_time.index("vecadd_grid") == 2
    two = choose(kernels, 80, 2)
    assert [k.name for k in two.kernels] == [by_time[0], "vecadd_grid"] and two.user == {"vecadd_grid"}
    assert [k.name for k in choose(kernels, 80, 1).kernels] == ["vecadd_grid"]
    five = choose(kernels, 80, 5)
    assert "vecadd_grid" in five.user and five.covered_pct >= 80


def test_a_triton_kernel_under_five_percent_beside_set_up_kernels_is_chosen():
    """The issue's case, synthetic: `python triton_softmax.py` where randn, abs and the comparison's
    reduce dominate and softmax_kernel is 4.4 % of the GPU time."""
    ks = (kernel("void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4>(long)", 40.0),
          kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>(int)", 25.0),
          kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(T3)", 20.0),
          kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)", 6.6),
          kernel("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10>(float *)", 4.0),
          kernel("softmax_kernel", 4.4))
    for limit in (1, 2, 3, 5):
        chosen = choose(ks, 80, limit)
        assert "softmax_kernel" in [k.name for k in chosen.kernels] and chosen.user == {"softmax_kernel"}
        assert len(chosen.kernels) <= limit
    assert [k.time_pct for k in choose(ks, 80, 5).kernels] == [40.0, 25.0, 20.0, 4.4]  # reaches 80 %, largest first


def test_many_user_kernels_leave_one_slot_to_the_dominant_library_kernel():
    ks = (kernel("sm90_xmma_gemm_f32f32_kernel", 60.0), *(kernel(f"mine_{i}", 8.0 - i) for i in range(6)))
    chosen = choose(ks, 80, 3)
    assert [k.name for k in chosen.kernels] == ["sm90_xmma_gemm_f32f32_kernel", "mine_0", "mine_1"]
    assert chosen.user == {"mine_0", "mine_1"}


def test_only_user_kernels_rank_by_time_as_before():
    ks = (kernel("a", 10), kernel("b", 50), kernel("c", 25), kernel("d", 15))
    assert [k.name for k in choose(ks, 80, 5).kernels] == ["b", "c", "d"]
    assert [k.name for k in choose(ks, 100, 2).kernels] == ["b", "c"]
    assert choose((), 80, 5).kernels == ()
