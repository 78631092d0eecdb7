"""Kernels in their own shape (issue 24 items 1-4), without a GPU: the argument mapping checked
against the kernel's parameters before any launch, C++ and template kernels found and built by nvcc
through a name expression, grid expressions, and the reads-output check's pieces (the GEMM epilogue,
the count of outputs left at their starting values)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpuprof import families
from gpuprof.cli import app
from gpuprof.errors import InputError, UsageError
from gpuprof.families import matmul
from gpuprof.measure.check import OutputUse, expected, kept_start
from gpuprof.variants import arguments, catalog, cubin
from gpuprof.variants.declarations import (
    instance_name,
    instantiated_parameters,
    kernel_declarations,
    same_instance,
    template_defines,
)
from gpuprof.variants.expressions import evaluate, size_symbols
from gpuprof.variants.user import load_kernels_dir, parse_add, to_variant

TUTORIAL = Path(__file__).resolve().parents[1] / "kernels" / "tutorial"
MATMUL = catalog.load_family("matmul")
SIGNATURE = [("int", "M"), ("int", "N"), ("int", "K"), ("float", "alpha"), ("const float*", "A"),
             ("const float*", "B"), ("float", "beta"), ("float*", "C")]
WARPTILING = "sgemmWarptiling<128,128,16,64,64,4,8,4,128>"
WARPTILING_SYMBOL = ("void sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>"
                     "(int, int, int, float, float const*, float const*, float, float*)")  # as __cxa_demangle writes it


def invoke(*argv: str):
    result = CliRunner().invoke(app, list(argv), env={"COLUMNS": "160"})
    assert "Traceback" not in result.output, result.output
    return result


# ---------------------------------------------------------------- declarations


@pytest.mark.parametrize(("file", "name", "template"), [
    ("naive.cuh", "sgemm_naive", None),
    ("shared_mem_blocking.cuh", "sgemm_shared_mem_block", "const int TILE"),
    ("blocktiling_2d.cuh", "sgemm2DBlocktiling",
     "const int BM, const int BN, const int BK, const int TM, const int TN"),
    ("warptiling.cuh", "sgemmWarptiling", None),
])
def test_tutorial_kernels_are_found_as_cpp_kernels_with_their_parameters(file, name, template):
    found = kernel_declarations((TUTORIAL / file).read_text())
    assert list(found) == [name]
    declaration = found[name]
    assert not declaration.extern_c
    if template is not None:
        assert declaration.template_params == template
    assert instantiated_parameters(declaration, name) == SIGNATURE


def test_extern_c_only_keeps_the_old_entry_points():
    source = 'extern "C" __global__ void a(int n) {}\n__global__ void b(int n) {}\n'
    assert list(kernel_declarations(source, extern_c_only=True)) == ["a"]
    assert kernel_declarations(source)["b"].extern_c is False


def test_template_type_parameters_take_the_name_expressions_types():
    source = "template <typename T, int BM>\n__global__ void k(int n, const T* __restrict__ x, T* y) {}\n"
    declaration = kernel_declarations(source)["k"]
    assert instantiated_parameters(declaration, "k<float, 64>") == [("int", "n"), ("const float*", "x"),
                                                                    ("float*", "y")]


def test_defines_named_in_the_name_expression_are_its_template_arguments():
    kernel = "sgemmWarptiling<BM, BN, NUM_THREADS>"
    defines = {"BM": 128, "BN": 64, "NUM_THREADS": 256, "PAD": 4}
    assert instance_name(kernel, defines) == "sgemmWarptiling<128, 64, 256>"
    assert template_defines(kernel, defines) == {"BM", "BN", "NUM_THREADS"}


@pytest.mark.parametrize(("demangled", "kernel", "same"), [
    (WARPTILING_SYMBOL, WARPTILING, True),
    ("void sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 64>(int)", WARPTILING, False),
    ("sgemm_naive(int, int, int, float, float const*, float const*, float, float*)", "sgemm_naive", True),
    ("void k<64u>(int)", "k<64>", True),
])
def test_a_demangled_symbol_matches_its_name_expression(demangled, kernel, same):
    assert same_instance(demangled, kernel) is same


def test_demangle_reads_the_symbols_nvcc_writes():
    if cubin.demangle("_Z11sgemm_naiveiiifPKfS0_fPf") is None:
        pytest.skip("libstdc++'s __cxa_demangle is not loadable here")
    assert cubin.demangle("_Z11sgemm_naiveiiifPKfS0_fPf").startswith("sgemm_naive(int, int, int, float")
    assert cubin.demangle("matmul_naive") is None  # extern "C": not mangled


# ---------------------------------------------------------------- the argument mapping


def resolve(args, params=SIGNATURE):
    return arguments.resolve(tuple(args), "sgemm_naive", params, MATMUL.signature, MATMUL.dims,
                             families.host(catalog.load_family("matmul")).SCALARS)


def test_the_tutorial_mapping_resolves_with_its_scalars_in_gemm_order():
    slots = resolve(arguments.parse_option("M,N,K,1.0,A,B,0.5,C"))
    assert [s.source for s in slots] == ["M", "N", "K", None, "A", "B", None, "C"]
    assert arguments.scalar_values(slots, matmul.SCALARS) == {"alpha": 1.0, "beta": 0.5}
    named = resolve(arguments.parse_option("M,N,K,alpha=2,A,B,beta=-1,C"))
    assert arguments.scalar_values(named, matmul.SCALARS) == {"alpha": 2.0, "beta": -1.0}


def test_bind_passes_sizes_and_numbers_in_the_declared_types():
    params = [("long", "M"), ("int", "N"), ("unsigned", "K"), ("double", "alpha"), *SIGNATURE[4:]]
    slots = resolve(("M", "N", "K", 1, "A", "B", 0.0, "C"), params)
    a, b, c = object(), object(), object()
    values = arguments.bind(slots, {"M": 5, "N": 6, "K": 7, "A": a, "B": b, "C": c})
    assert [type(v) for v in values[:4]] == [np.int64, np.int32, np.uint32, np.float64]
    assert values[4] is a and values[7] is c and values[6] == np.float32(0.0)


@pytest.mark.parametrize(("text", "position_and_words"), [
    ("M,N,K,1.0,A,B,C", ["gives 7 arguments", "takes 8"]),
    ("M,N,K,A,1.0,B,0.0,C", ["position 4 (A)", "'float alpha'", "not a pointer"]),
    ("M,N,K,1.0,A,B,0.0,D", ["position 8 (D)", "no name of this family", "A, B, C"]),
    ("M,N,1.5,1.0,A,B,0.0,C", ["position 3 (1.5)", "an integer", "fraction"]),
    ("M,N,K,1.0,C,B,0.0,C", ["position 5 (C)", "output", "const"]),
    ("M,N,K,1.0,A,B,gamma=2,C", ["position 7", "'gamma' is no scalar"]),
    ("M,N,K,1.0,1,B,0.0,C", ["position 5 (1)", "a pointer", "buffer name"]),
])
def test_a_wrong_mapping_is_one_line_naming_the_position(text, position_and_words):
    with pytest.raises(arguments.ArgsError) as info:
        resolve(arguments.parse_option(text))
    message = str(info.value)
    assert "\n" not in message
    for words in position_and_words:
        assert words in message, message


def test_the_output_must_be_passed():
    params = [*SIGNATURE[:7], ("const float*", "D")]
    with pytest.raises(arguments.ArgsError, match="never passes C"):
        resolve(("M", "N", "K", 1.0, "A", "B", 0.0, "B"), params)


def test_an_empty_position_in_the_option_is_named():
    with pytest.raises(arguments.ArgsError, match="position 3 is empty"):
        arguments.parse_option("M,N,,1.0")


def test_add_with_args_checks_before_any_launch_and_without_them_names_the_option():
    target = f"{TUTORIAL / 'naive.cuh'}:sgemm_naive"
    with pytest.raises(InputError, match="map them with --args"):
        to_variant(MATMUL, parse_add(target))
    with pytest.raises(UsageError, match="position 6 \\(C\\)"):
        to_variant(MATMUL, parse_add(target, args="M,N,K,1.0,A,C,0.0,B", reads_output=True))
    variant = to_variant(MATMUL, parse_add(target, block="32,32", grid="ceil(M/32),ceil(N/32)",
                                           args="M,N,K,1.0,A,B,0.0,C", reads_output=True))
    assert variant.kernel == "sgemm_naive" and variant.grid == "expressions" and variant.reads_output


def test_beta_without_reads_output_is_refused():
    with pytest.raises(UsageError, match="beta = 0.5 makes the kernel read its output; add --reads-output"):
        to_variant(MATMUL, parse_add(f"{TUTORIAL / 'naive.cuh'}:sgemm_naive", args="M,N,K,1.0,A,B,0.5,C"))


def test_a_template_named_without_its_arguments_is_a_usage_error():
    with pytest.raises(UsageError, match="is a template; name an instance"):
        to_variant(MATMUL, parse_add(f"{TUTORIAL / 'warptiling.cuh'}:sgemmWarptiling", args="M,N,K,1,A,B,0,C"))


def test_the_child_of_a_profiler_gets_the_same_options_again():
    spec = parse_add(f"{TUTORIAL / 'warptiling.cuh'}:{WARPTILING}", block="128", grid="ceil(N/128),ceil(M/128)",
                     args="M,N,K,1.0,A,B,0.0,C", reads_output=True)
    argv = spec.cli_args()
    assert argv[argv.index("--args") + 1] == "M,N,K,1.0,A,B,0.0,C" and "--reads-output" in argv
    assert argv[argv.index("--grid") + 1] == "ceil(N/128),ceil(M/128)"
    assert argv[argv.index("--add") + 1].endswith(f"warptiling.cuh:{WARPTILING}")


# ---------------------------------------------------------------- the kernels-dir manifest


def test_the_tutorial_manifest_loads_with_its_mappings_and_grids():
    variants = {v.name: v for v in load_kernels_dir(TUTORIAL, MATMUL)}
    assert len(variants) == 6
    naive = variants["tut_naive"]
    assert naive.grid_dims(MATMUL.dims, {"m": 127, "n": 129, "k": 65}) == (4, 5)  # rows on x
    warp = variants["tut_warptiling"]
    assert warp.block_dims() == (128, 1, 1)
    assert warp.grid_dims(MATMUL.dims, {"m": 257, "n": 255, "k": 300}) == (2, 3)
    assert all(v.reads_output and v.args is not None for v in variants.values())


def test_a_manifest_mapping_that_does_not_fit_names_the_manifest_and_position(tmp_path):
    text = (TUTORIAL / "matmul.toml").read_text().replace('args = ["M", "N", "K", 1.0, "A", "B", 0.5, "C"]',
                                                          'args = ["M", "N", "K", 1.0, "A", "B", "C"]')
    for header in ("naive.cuh", "common.cuh"):
        (tmp_path / header).write_text((TUTORIAL / header).read_text())
    (tmp_path / "matmul.toml").write_text(text.split("[[variant]]\nname = \"tut_smem\"")[0])
    with pytest.raises(InputError) as info:
        load_kernels_dir(tmp_path, MATMUL)
    assert str(tmp_path / "matmul.toml") in info.value.message and "args gives 7 arguments" in info.value.message


# ---------------------------------------------------------------- grid expressions


@pytest.mark.parametrize(("expr", "expected_value"), [
    ("ceil(M/32)", 4), ("ceil(N/BN)", 2), ("floor(N/32)", 4), ("cdiv(K, 64)", 2), ("min(M, 64)", 64),
    ("max(ceil(M/128), 2)", 2), ("M/32", 3), ("ceil(M*N/1000)", 17),
])
def test_grid_expressions_over_sizes_and_defines(expr, expected_value):
    symbols = {"BN": 128, **size_symbols(("m", "n", "k"), {"m": 127, "n": 129, "k": 65})}
    assert evaluate(expr, symbols) == expected_value


@pytest.mark.parametrize("expr", ["ceil(M/32, 2)", "abs(M)", "ceil()", "cdiv(M)", "M.real", "ceil(x=1)"])
def test_grid_expressions_refuse_anything_else(expr):
    with pytest.raises(ValueError):
        evaluate(expr, {"M": 100})


def test_a_grid_option_with_an_unknown_name_is_refused_before_any_launch():
    with pytest.raises(UsageError, match="uses Q"):
        to_variant(MATMUL, parse_add(f"{TUTORIAL / 'naive.cuh'}:sgemm_naive", block="32,32", grid="ceil(Q/32)",
                                     args="M,N,K,1.0,A,B,0.0,C", reads_output=True))


# ---------------------------------------------------------------- reads_output: reference and unwritten outputs


def test_the_gemm_epilogue_adds_beta_c_only_from_starting_values():
    ref, start = np.full((2, 2), 3.0), np.full((2, 2), 10.0)
    assert np.array_equal(matmul.epilogue(ref, start, {"alpha": 2.0, "beta": 0.5}), np.full((2, 2), 11.0))
    assert np.array_equal(matmul.epilogue(ref, None, {"alpha": 2.0, "beta": 0.0}), np.full((2, 2), 6.0))
    host = families.host(catalog.load_family("matmul"))
    assert host.reads_start({"alpha": 1.0, "beta": 0.5}) and not host.reads_start({"alpha": 3.0, "beta": 0.0})
    use = OutputUse(True, {"alpha": 1.0, "beta": 0.5})
    assert np.array_equal(expected(host, ref, use, start.astype(np.float32)), np.full((2, 2), 8.0))
    assert use.feeds_back(host) and not OutputUse(True, {"alpha": 1.0, "beta": 0.0}).feeds_back(host)
    assert any("not compared" in line for line in use.notes(host))


def test_outputs_left_at_their_starting_values_are_counted_as_not_written():
    rng = np.random.default_rng(7)
    start = rng.uniform(-1, 1, (8, 8)).astype(np.float32)
    ref = rng.uniform(-4, 4, (8, 8))
    out = ref.astype(np.float32)
    out[3, :5] = start[3, :5]  # five outputs the kernel never wrote
    assert kept_start(out, start, ref, tolerance=1e-5) == 5
    assert kept_start(ref.astype(np.float32), start, ref, tolerance=1e-5) == 0


# ---------------------------------------------------------------- without a GPU: build, and exit 2 before any launch


@pytest.mark.nvcc
def test_build_add_of_a_template_instance_in_a_cuh_prints_registers_and_spills():
    result = invoke("build", "--add", f"{TUTORIAL / 'warptiling.cuh'}:{WARPTILING}", "--json", "-")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["kernels"]
    assert row["variant"] == f"warptiling:{WARPTILING}" and row["error"] is None
    assert row["resources"]["registers"] > 0 and row["resources"]["spill_store_bytes"] == 0
    assert row["resources"]["shared_bytes"] == 16 * (128 + 128) * 4
    table = invoke("build", "--add", f"{TUTORIAL / 'naive.cuh'}:sgemm_naive")
    assert table.exit_code == 0 and "registers" in table.output and "spill" in table.output


@pytest.mark.nvcc
def test_build_kernels_dir_compiles_every_tutorial_rung():
    result = invoke("build", "matmul", "--kernels-dir", str(TUTORIAL), "--json", "-")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["kernels"]
    assert [r["variant"] for r in rows] == ["tut_naive", "tut_smem", "tut_1d", "tut_2d", "tut_vectorized",
                                           "tut_warptiling"]
    assert all(r["error"] is None and r["resources"]["registers"] > 0 for r in rows), rows


@pytest.mark.nvcc
def test_build_of_an_instance_that_does_not_exist_names_the_name_expression():
    result = invoke("build", "--add", f"{TUTORIAL / 'warptiling.cuh'}:sgemmWarptiling<1,2>")
    assert result.exit_code == 2
    assert "sgemmWarptiling<1,2>" in result.stderr and "instance" in result.stderr


@pytest.mark.parametrize(("args", "words"), [
    ("M,N,K,1.0,A,B,C", "gives 7 arguments"),
    ("M,N,K,1.0,A,B,0.0,1", "position 8 (1)"),
    ("M,N,K,1.0,A,B,0.0,X", "position 8 (X)"),
])
@pytest.mark.parametrize("command", ["run", "build", "sanitize", "ncu"])
def test_a_wrong_args_is_exit_2_before_any_launch(command, args, words, tmp_path):
    argv = [command, "matmul", "--add", f"{TUTORIAL / 'naive.cuh'}:sgemm_naive", "--args", args, "--reads-output"]
    if command in ("sanitize", "ncu"):
        argv += ["--out", str(tmp_path / "o")]
    result = invoke(*argv)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and words in line, line


def test_an_added_file_named_like_a_built_in_variant_takes_its_kernels_name():
    from gpuprof.variants import catalog
    from gpuprof.variants.user import added_name

    matmul = catalog.load_family("matmul")
    assert "naive" in matmul.variant_names
    assert added_name(matmul, Path("naive.cuh"), "sgemm_naive") == "sgemm_naive"
    assert added_name(matmul, Path("mine.cu"), "matmul_mine") == "mine"
    assert added_name(matmul, Path("naive.cu"), "naive") == "naive_yours"
    assert added_name(matmul, Path("warptiling.cuh"), "sgemmWarptiling<128,128>") in {"warptiling", "sgemmWarptiling"}
