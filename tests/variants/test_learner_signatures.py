"""Signatures as learners write them: `float*` for the family's `const float* __restrict__` is
accepted by --add and by a kernels-dir manifest without --args; anything else still is refused."""

from __future__ import annotations

import textwrap

import pytest

from gpuprof.errors import InputError
from gpuprof.variants import catalog
from gpuprof.variants.user import AddSpec, add_to_family, loose_type, parse_add, to_variant

MATMUL = catalog.load_family("matmul")
VECADD = catalog.load_family("vecadd")

COURSE_MATMUL = """\
__global__ void matrixMultiplyOptimized(float* A, float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int i = 0; i < K; ++i) sum += A[row * K + i] * B[i * N + col];
        C[row * N + col] = sum;
    }
}
"""
COURSE_VECADD = """\
__global__ void vector_add_gpu_1d(float *a, float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def test_loose_type_drops_const_only():
    assert loose_type("const float*") == "float*" == loose_type("float*")
    assert loose_type("const int") == "int"
    assert loose_type("float*") != loose_type("int")


def test_course_matmul_signature_is_accepted_by_add(tmp_path):
    path = tmp_path / "course.cu"
    path.write_text(COURSE_MATMUL)
    variant = to_variant(MATMUL, parse_add(str(path)))
    assert variant.kernel == "matrixMultiplyOptimized" and variant.args is None


def test_course_vecadd_signature_is_accepted_by_add(tmp_path):
    path = tmp_path / "vadd.cu"
    path.write_text(COURSE_VECADD)
    assert to_variant(VECADD, parse_add(str(path))).kernel == "vector_add_gpu_1d"


def test_course_signature_is_accepted_in_a_kernels_dir_manifest(tmp_path):
    (tmp_path / "course.cu").write_text(COURSE_MATMUL)
    (tmp_path / "matmul.toml").write_text(textwrap.dedent("""\
        family = "matmul"
        [[variant]]
        name = "course"
        file = "course.cu"
        kernel = "matrixMultiplyOptimized"
        technique = "the course's kernel"
        block = [16, 16]
        tile = [16, 16]
        """))
    _, extra = add_to_family(MATMUL, AddSpec(None, kernels_dir=tmp_path))
    assert [v.kernel for v in extra] == ["matrixMultiplyOptimized"]


@pytest.mark.parametrize(("params", "got"), [
    ("float* A, float* B, float* C, int M, int N", "float*, float*, float*, int, int"),
    ("float* A, float* B, float* C, int M, int N, int K, int L", "float*, float*, float*, int, int, int, int"),
    ("float* A, float* B, int C, int M, int N, int K", "float*, float*, int, int, int, int"),
    ("double* A, float* B, float* C, int M, int N, int K", "double*, float*, float*, int, int, int"),
])
def test_a_real_mismatch_is_still_refused_with_todays_message(tmp_path, params, got):
    path = tmp_path / "bad.cu"
    path.write_text(f"__global__ void k({params}) {{}}\n")
    with pytest.raises(InputError) as info:
        to_variant(MATMUL, parse_add(str(path)))
    assert info.value.message == (f"{path}:1: matmul kernels take (const float*, const float*, float*, int, int, int); "
                                  f"k takes ({got}); map them with --args (or args = [...] in a manifest)")
