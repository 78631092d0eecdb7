"""The student path (issue 14 item 7): a kernel copied from a built-in, renamed, added with
`--add` or `--kernels-dir`, checked against the family's signature and compiled by nvcc for its
resource report, without a GPU. Also templates behind an extern "C" wrapper and a header beside
the file."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands.build import build_family, build_file
from gpuprof.errors import InputError
from gpuprof.variants import catalog, nvrtc
from gpuprof.variants.user import AddSpec, add_to_family, kernel_declarations, parse_add, to_variant

MATMUL = catalog.load_family("matmul")
BOUNDED_BUILTINS = [(f, v) for f in catalog.load_all() for v in f.variants
                    if v.is_cuda and "__launch_bounds__" in v.file.read_text()]


def copy_builtin(tmp_path: Path, variant: str = "smem_tiled", new_name: str = "mine", family=MATMUL) -> Path:
    """What a student does: copy a shipped kernel and rename its function."""
    v = family.variant(variant)
    path = tmp_path / f"{new_name}.cu"
    path.write_text(v.file.read_text().replace(v.kernel, f"{family.name}_{new_name}"))
    return path


# ---------------------------------------------------------------- the declaration regex


@pytest.mark.parametrize(("fam", "v"), BOUNDED_BUILTINS, ids=[f"{f.name}/{v.name}" for f, v in BOUNDED_BUILTINS])
def test_every_shipped_launch_bounds_kernel_is_found_by_its_name(fam, v):
    found = kernel_declarations(v.file.read_text())
    assert v.kernel in found
    assert "__launch_bounds__" not in found
    assert found[v.kernel].bounds


@pytest.mark.parametrize("declaration", [
    'extern "C" __global__ void __launch_bounds__(256) k(int n)',
    'extern "C" __global__ __launch_bounds__(256, 2) void k(int n)',
    'extern "C" __global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)\nk(int n)',
    'extern "C"   __global__   void\n  k (int n)',
])
def test_declaration_forms_give_the_kernel_name_and_params(declaration):
    found = kernel_declarations(declaration + " {}\n")
    assert list(found) == ["k"]
    assert found["k"].params == "int n"


def test_commented_out_kernels_are_not_entry_points_and_lines_stay_right():
    source = '// extern "C" __global__ void old(int n) {}\n/* extern "C" __global__ void older(int n)\n*/\n' \
             'extern "C" __global__ void k(int n) {}\n'
    found = kernel_declarations(source)
    assert list(found) == ["k"] and found["k"].line == 4


# ---------------------------------------------------------------- --add of a copied built-in


def test_copied_builtin_passes_the_signature_check(tmp_path):
    path = copy_builtin(tmp_path)
    variant = to_variant(MATMUL, parse_add(str(path)))
    assert variant.kernel == "matmul_mine" and variant.user
    variant = to_variant(MATMUL, parse_add(f"{path}:matmul_mine"))
    assert variant.kernel == "matmul_mine"


def test_copied_builtin_with_a_wrong_parameter_names_file_line_and_both_signatures(tmp_path):
    path = copy_builtin(tmp_path)
    path.write_text(path.read_text().replace("int M, int N, int K", "int M, int N"))
    with pytest.raises(InputError) as info:
        to_variant(MATMUL, parse_add(str(path)))
    line = info.value.message.split(":")[1]
    assert "matmul_mine(" in path.read_text().splitlines()[int(line) - 1]
    assert "matmul_mine takes (const float*, const float*, float*, int, int)" in info.value.message


def test_kernels_dir_with_a_copied_builtin_loads(tmp_path):
    copy_builtin(tmp_path)
    (tmp_path / "matmul.toml").write_text(textwrap.dedent("""\
        family = "matmul"
        [[variant]]
        name = "mine"
        file = "mine.cu"
        kernel = "matmul_mine"
        technique = "my tiles"
        block = ["TILE", "TILE"]
        tile = ["TILE", "TILE"]
        defines = { TILE = 32 }
        """))
    fam, extra = add_to_family(MATMUL, AddSpec(None, kernels_dir=tmp_path))
    assert [v.name for v in extra] == ["mine"] and fam.variant("mine").kernel == "matmul_mine"


def test_user_variant_nvrtc_options_put_the_files_folder_on_the_include_path(tmp_path):
    variant = to_variant(MATMUL, parse_add(str(copy_builtin(tmp_path))))
    assert f"-I{tmp_path.resolve()}" in nvrtc.nvrtc_options(variant)


# ---------------------------------------------------------------- nvcc: the resource report


TEMPLATE_WITH_HEADER = """\
    // matmul / templated: a template body behind an extern "C" wrapper, tile size from a header
    #include "tile.h"

    template <int T>
    __device__ void tiled_body(const float* __restrict__ A, const float* __restrict__ B,
                               float* __restrict__ C, int M, int N, int K) {
        __shared__ float As[T][T];
        __shared__ float Bs[T][T];
        int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
        float acc = 0.f;
        for (int k0 = 0; k0 < K; k0 += T) {
            As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.f;
            Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.f;
            __syncthreads();
            for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
            __syncthreads();
        }
        if (row < M && col < N) C[row * N + col] = acc;
    }

    extern "C" __global__ void __launch_bounds__(MY_TILE * MY_TILE)
    matmul_templated(const float* __restrict__ A, const float* __restrict__ B,
                     float* __restrict__ C, int M, int N, int K) {
        tiled_body<MY_TILE>(A, B, C, M, N, K);
    }
    """


def write_templated(tmp_path: Path) -> Path:
    (tmp_path / "tile.h").write_text("#pragma once\n#define MY_TILE 16\n")
    path = tmp_path / "templated.cu"
    path.write_text(textwrap.dedent(TEMPLATE_WITH_HEADER))
    return path


@pytest.mark.nvcc
def test_copied_builtin_builds_with_the_same_resources_as_the_original(tmp_path):
    original = MATMUL.variant("smem_tiled")
    mine = to_variant(MATMUL, parse_add(str(copy_builtin(tmp_path))))
    (ours,), (theirs,) = build_family(MATMUL, [mine], "sm_90"), build_family(MATMUL, [original], "sm_90")
    assert ours.error is None and ours.usage is not None
    assert ours.usage.kernel == "matmul_mine"
    assert ours.usage.shared_bytes == theirs.usage.shared_bytes == 2 * 32 * 32 * 4
    assert ours.usage.registers == theirs.usage.registers


@pytest.mark.nvcc
def test_template_behind_extern_c_wrapper_with_a_header_beside_it_builds(tmp_path):
    path = write_templated(tmp_path)
    variant = to_variant(MATMUL, parse_add(str(path)))  # the signature check reads the wrapper
    (result,) = build_family(MATMUL, [variant], "sm_90")
    assert result.error is None, result.error
    assert result.usage.shared_bytes == 2 * 16 * 16 * 4  # MY_TILE came from tile.h


@pytest.mark.nvcc
def test_build_file_alone_reports_each_extern_c_kernel(tmp_path):
    (result,) = build_file(write_templated(tmp_path), "sm_90")
    assert result.variant == "templated:matmul_templated" and result.usage.registers > 0


@pytest.mark.nvcc
def test_build_file_that_does_not_compile_names_the_file_and_line(tmp_path):
    path = tmp_path / "broken.cu"
    path.write_text('extern "C" __global__ void k(int n) {\n  undeclared = n;\n}\n')
    (result,) = build_file(path, "sm_90")
    assert result.usage is None and re.search(r"broken\.cu:2: .*error", result.error)


@pytest.mark.nvcc
def test_cli_build_add_prints_registers_smem_and_spills(tmp_path):
    path = copy_builtin(tmp_path)
    result = CliRunner().invoke(app, ["build", "--add", str(path), "--json", "-"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["kernels"]
    assert row["variant"] == "mine:matmul_mine"
    assert row["resources"]["shared_bytes"] == 8192 and row["resources"]["spill_store_bytes"] == 0
    table = CliRunner().invoke(app, ["build", "matmul", "--add", str(path), "--variants", "tiled"])
    assert table.exit_code == 0, table.output
    assert "smem_tiled" in table.output and "mine" in table.output


@pytest.mark.nvcc
def test_cli_build_kernels_dir_builds_only_the_students_variants(tmp_path):
    test_kernels_dir_with_a_copied_builtin_loads(tmp_path)
    result = CliRunner().invoke(app, ["build", "--kernels-dir", str(tmp_path), "--json", "-"])
    assert result.exit_code == 0, result.output
    assert [(r["family"], r["variant"]) for r in json.loads(result.stdout)["kernels"]] == [("matmul", "mine")]


def test_cli_build_kernels_dir_without_a_manifest_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(app, ["build", "--kernels-dir", str(tmp_path)])
    assert result.exit_code == 2 and "has no" in result.output and "DIR/<family>.toml" in result.output
