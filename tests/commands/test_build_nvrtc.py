"""Every shipped CUDA variant compiles under NVRTC, as `gpuprof run` compiles it, without a GPU.

nvcc includes cuda_runtime.h (and with it math.h) in every file; NVRTC does not. A kernel using
INFINITY compiled with nvcc (tests/commands/test_build_nvcc.py) and failed on the H100 under NVRTC, so
this test compiles each variant's exact source and options with libnvrtc, for sm_90. It needs
only the NVRTC library (the `nvidia-cuda-nvrtc` wheel of the test extra), no driver."""

from __future__ import annotations

import pytest

from gpuprof.variants import catalog
from gpuprof.variants.nvrtc import nvrtc_library, nvrtc_options, nvrtc_source


def _nvrtc():
    nvrtc = nvrtc_library()
    if nvrtc is None:  # the nvcc build test still runs
        pytest.skip("NVRTC is not loadable here; pip install nvidia-cuda-nvrtc")
    return nvrtc


CUDA_VARIANTS = [(fam.name, v) for fam in catalog.load_all() for v in fam.variants if v.is_cuda and v.file is not None]


@pytest.mark.parametrize(("family", "variant"), CUDA_VARIANTS, ids=[f"{f}-{v.name}" for f, v in CUDA_VARIANTS])
def test_variant_compiles_under_nvrtc_for_sm_90(family, variant):
    nvrtc = _nvrtc()
    program = nvrtc.createProgram(nvrtc_source(variant), variant.file.name, [], [])
    try:
        nvrtc.compileProgram(program, [*nvrtc_options(variant), "-arch=sm_90"])
    except nvrtc.NVRTCError:
        pytest.fail(f"{family}/{variant.name} does not compile under NVRTC:\n{nvrtc.getProgramLog(program)}")
    finally:
        nvrtc.destroyProgram(program)


def test_a_kernel_that_needs_math_h_fails_under_nvrtc():
    """The check can fail: INFINITY without math.h, as mnist/hand.cu had it."""
    nvrtc = _nvrtc()
    source = 'extern "C" __global__ void k(float* x) { x[0] = -INFINITY; }\n'
    program = nvrtc.createProgram(source, "k.cu", [], [])
    with pytest.raises(nvrtc.NVRTCError):
        nvrtc.compileProgram(program, ["-arch=sm_90"])
    assert "INFINITY" in nvrtc.getProgramLog(program)
    nvrtc.destroyProgram(program)


MINE = """extern "C" __global__ void vecadd_mine(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = (a[i] == LIMIT) ? 0.0f : a[i] + b[i];
}
"""


@pytest.mark.parametrize(("limit", "code"), [("INFINITY", 2), ("__int_as_float(0x7f800000)", 0)])
def test_build_add_says_when_nvcc_builds_a_students_kernel_that_nvrtc_rejects(tmp_path, limit, code):
    _nvrtc()
    from typer.testing import CliRunner

    from gpuprof.cli import app

    mine = tmp_path / "mine.cu"
    mine.write_text(MINE.replace("LIMIT", limit))
    result = CliRunner().invoke(app, ["build", "vecadd", "--add", str(mine)])
    assert result.exit_code == code, result.stderr
    if code:
        (line,) = [x for x in result.stderr.splitlines() if x.strip()]
        assert "NVRTC (what `gpuprof run` compiles with) does not" in line
        assert "mine.cu:4: error: identifier \"INFINITY\" is undefined" in line
