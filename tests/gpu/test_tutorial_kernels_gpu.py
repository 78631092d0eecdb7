"""The SGEMM ladder in the tutorial's own shape (tests/kernels/tutorial: C++ templates in .cuh files
with host includes, (int M, int N, int K, float alpha, const float* A, const float* B, float beta,
float* C), C = alpha*A*B + beta*C) run unmodified: checked OK against the reference with beta*C,
timed, and seen by ncu and compute-sanitizer as the built-ins are. Needs a GPU, CuPy and nvcc
(NVRTC cannot open <cstdio>: gpuprof compiles these files to a cubin)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app

pytestmark = pytest.mark.gpu
TUTORIAL = Path(__file__).resolve().parent.parent / "kernels" / "tutorial"
SIZE = "1024"  # quick for the naive rung, several tiles for the others
WARPTILING = f"{TUTORIAL / 'warptiling.cuh'}:sgemmWarptiling<128,128,16,64,64,4,8,4,128>"
TUTORIAL_ARGS = ["--args", "M,N,K,1.0,A,B,0.0,C", "--reads-output"]


def invoke(*argv: str):
    result = CliRunner().invoke(app, list(argv), env={"COLUMNS": "200"})
    assert "Traceback" not in result.output, result.output
    return result


def needs(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not on PATH")


def rows_of(result) -> dict[str, dict]:
    return {r["variant"]: r for r in json.loads(result.stdout)["rows"]}


def test_every_rung_of_the_kernels_dir_is_ok_against_the_reference_with_beta_c(tmp_path):
    needs("nvcc")
    result = invoke("run", "matmul", "--kernels-dir", str(TUTORIAL), "--variants", "cublas", "--size", SIZE,
                    "--json", "-")
    assert result.exit_code == 0, result.output
    rows = rows_of(result)
    tutorial = {name: row for name, row in rows.items() if name.startswith("tut_")}
    assert set(tutorial) == {"tut_naive", "tut_smem", "tut_1d", "tut_2d", "tut_vectorized", "tut_warptiling"}
    for name, row in tutorial.items():
        assert row["check"]["status"] == "ok", (name, row["check"])
        assert row["timing"]["summary"]["median_s"] > 0, name
        assert any("reads its output" in note for note in row["check"]["notes"]), row["check"]
    # beta = 0.5 for the naive rung: the output fed back, so the post-timing comparison is said to be skipped
    assert any("beta = 0.5" in n for n in tutorial["tut_naive"]["check"]["notes"])
    assert any("not compared" in n for n in tutorial["tut_naive"]["check"]["notes"])
    assert not any("not compared" in n for n in tutorial["tut_2d"]["check"]["notes"])


def test_add_of_a_template_instance_with_args_and_grid_expressions_is_ok(tmp_path):
    needs("nvcc")
    result = invoke("run", "matmul", "--add", WARPTILING, *TUTORIAL_ARGS, "--block", "128",
                    "--grid", "ceil(N/128),ceil(M/128)", "--variants", "cublas", "--size", SIZE, "--json", "-")
    assert result.exit_code == 0, result.output
    assert rows_of(result)["sgemmWarptiling"]["check"]["status"] == "ok"


def test_naive_with_rows_on_x_is_ok_through_add(tmp_path):
    needs("nvcc")
    result = invoke("run", "matmul", "--add", f"{TUTORIAL / 'naive.cuh'}:sgemm_naive", "--args",
                    "M,N,K,2.0,A,B,beta=-1.5,C", "--reads-output", "--block", "32,32",
                    "--grid", "ceil(M/32),ceil(N/32)", "--variants", "cublas", "--size", "512", "--json", "-")
    assert result.exit_code == 0, result.output
    assert rows_of(result)["sgemm_naive"]["check"]["status"] == "ok"


def test_without_reads_output_the_nan_poison_is_named_as_the_cause(tmp_path):
    needs("nvcc")
    result = invoke("run", "matmul", "--add", f"{TUTORIAL / 'naive.cuh'}:sgemm_naive", "--args",
                    "M,N,K,1.0,A,B,0.0,C", "--block", "32,32", "--grid", "ceil(M/32),ceil(N/32)",
                    "--variants", "cublas", "--size", "256", "--json", "-")
    assert result.exit_code == 1, result.output
    check = rows_of(result)["sgemm_naive"]["check"]
    assert check["status"] == "wrong" and any("--reads-output" in r for r in check["reasons"]), check


def test_a_rung_that_skips_a_column_is_wrong_with_the_count_of_unwritten_outputs(tmp_path):
    needs("nvcc")
    broken = tmp_path / "tutorial"
    shutil.copytree(TUTORIAL, broken)
    naive = broken / "naive.cuh"
    naive.write_text(naive.read_text().replace("if (row < M && col < N) {", "if (row < M && col < N - 1) {"))
    result = invoke("run", "matmul", "--add", f"{naive}:sgemm_naive", *TUTORIAL_ARGS, "--block", "32,32",
                    "--grid", "ceil(M/32),ceil(N/32)", "--variants", "cublas", "--size", "256", "--json", "-")
    assert result.exit_code == 1, result.output
    reasons = rows_of(result)["sgemm_naive"]["check"]["reasons"]
    assert any("outputs not written (still hold their starting values)" in r for r in reasons), reasons


def test_ncu_profiles_the_template_instance(tmp_path):
    needs("ncu")
    needs("nvcc")
    result = invoke("ncu", "matmul", "--kernels-dir", str(TUTORIAL), "--variants", "tut_2d", "--size", "512",
                    "--out", str(tmp_path / "o"), "--json", "-")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "sgemm2DBlocktiling" in text


def test_sanitize_memcheck_and_initcheck_are_clean_on_the_tutorial_rungs(tmp_path):
    needs("compute-sanitizer")
    needs("nvcc")
    result = invoke("sanitize", "matmul", "--kernels-dir", str(TUTORIAL), "--variants", "tut_naive,tut_warptiling",
                    "--tool", "memcheck,initcheck", "--size", "256", "--out", str(tmp_path / "o"), "--json", "-")
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["runs"]
    assert {r["tool"] for r in runs} == {"memcheck", "initcheck"}
    for run in runs:
        assert run["error"] is None and run["findings"] == [], run
