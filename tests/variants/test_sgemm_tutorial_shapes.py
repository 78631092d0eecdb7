"""The public SGEMM tutorial's (siboehm/SGEMM_CUDA, MIT) 2D-blocktiling and warptiling templates, as
published (tests/kernels/tutorial/sgemm_cuda/): both added side by side from their headers, named,
with their own argument order and grid, and `--require` saying the sizes they handle. The check then
runs them only where that holds: matmul's awkward check sizes move to the nearest multiples, and a
benchmark size that breaks a constraint is not run. (Compiling them needs cuBLAS's headers, which a
CUDA toolkit install has; the GPU run is in docs/PERFORMANCE.md.)"""

from __future__ import annotations

from pathlib import Path

from gpuprof.results import size_label
from gpuprof.variants import catalog, constraints
from gpuprof.variants.user import parse_add, to_variant

TUTORIAL = Path(__file__).resolve().parents[1] / "kernels" / "tutorial" / "sgemm_cuda"
BLOCKTILE = f"{TUTORIAL}/5_kernel_2D_blocktiling.cuh:sgemm2DBlocktiling<128,128,8,8,8>=blocktile2d"
WARPTILE = f"{TUTORIAL}/10_kernel_warptiling.cuh:sgemmWarptiling<128,128,16,64,64,4,8,4,128>=warptile_t"
REQUIRE = "M%128==0,N%128==0,K%16==0"


def added(target: str, block: str):
    matmul = catalog.load_family("matmul")
    spec = parse_add(target, block=block, grid="ceil(N/128),ceil(M/128)", args="M,N,K,1.0,A,B,0.0,C",
                     require=REQUIRE)
    return matmul, to_variant(matmul, spec)


def test_both_templates_are_taken_unmodified_side_by_side_with_their_names():
    matmul, blocktile = added(BLOCKTILE, "256")
    _, warptile = added(WARPTILE, "128")
    assert (blocktile.name, warptile.name) == ("blocktile2d", "warptile_t")
    assert blocktile.kernel == "sgemm2DBlocktiling<128,128,8,8,8>"
    assert warptile.require == blocktile.require == ("M%128==0", "N%128==0", "K%16==0")
    both = matmul.with_variants([blocktile, warptile])
    assert both.variant("warptile_t") is warptile


def test_check_sizes_move_to_multiples_and_a_breaking_benchmark_size_is_not_run():
    matmul, blocktile = added(BLOCKTILE, "256")
    dims = matmul.dims
    plan = constraints.plan_check(blocktile.require, dims, matmul.check_sizes, {"m": 4096, "n": 4096, "k": 4096},
                                  blocktile.defines)
    assert plan.skip is None and plan.replaced
    for size in plan.sizes:
        assert constraints.violations(blocktile.require, dims, size, blocktile.defines) == []
    assert len({size_label(s) for s in plan.sizes}) == len(plan.sizes)  # still several distinct sizes
    odd = constraints.plan_check(blocktile.require, dims, matmul.check_sizes, {"m": 4000, "n": 4096, "k": 4096},
                                 blocktile.defines)
    assert odd.skip is not None and "M%128==0" in odd.skip and "not run" in odd.skip
