"""On a GPU, through the CLI: the success paths of devicequery --measure, doctor, nsys (and its
PyTorch-profiler fallback), ncu and sanitize, each as a user types it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.errors import EnvironmentProblem
from gpuprof.measure import device_ceilings
from gpuprof.tools import nsys as nsys_tool

pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent.parent / "kernels"
SMALL = "2^20"  # vecadd elements: enough for every tool, quick under all of them


def needs(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not on PATH")


def invoke(*argv: str):
    result = CliRunner().invoke(app, list(argv), env={"COLUMNS": "200"})
    assert "Traceback" not in result.output, result.output
    return result


def test_devicequery_measure_json_is_positive_and_under_the_datasheet(tmp_path, monkeypatch):
    monkeypatch.setattr(device_ceilings, "CACHE_DIR", tmp_path)  # the measurement is cached: not in the user's cache
    pytest.importorskip("torch", reason="the FP32 rate is measured with a torch matmul (cuBLAS)")
    result = invoke("devicequery", "--measure", "--json", "-")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schema"] == "gpuprof.devicequery"
    datasheet, measured = data["ceilings"], data["measured_ceilings"]
    assert datasheet["bandwidth_gb_s"] and datasheet["fp32_tflop_s"], f"no datasheet for this GPU: {datasheet}"
    assert 0 < measured["copy_bandwidth_gb_s"] < datasheet["bandwidth_gb_s"]
    assert 0 < measured["cublas_fp32_tflop_s"] < datasheet["fp32_tflop_s"]
    assert measured["source"].startswith("measured")


def test_doctor_json_exits_0_with_the_gpu_and_cupy_ok(nvcc_available):
    result = invoke("doctor", "--json", "-")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema"] == "gpuprof.doctor" and document["ok"] is True
    checks = {c["name"]: c for c in document["checks"]}
    assert checks["CUDA GPU"]["ok"] and "sm_" in checks["CUDA GPU"]["detail"]
    assert checks["cupy"]["ok"] and checks["nvcc"]["ok"]


def test_nsys_family_kernel_table_names_the_kernel(tmp_path):
    """With nsys if it is found (else the PyTorch-profiler fallback answers: either way a kernel table)."""
    result = invoke("nsys", "vecadd", "-v", "grid", "-s", SMALL, "--wide", "--out", str(tmp_path / "o"))
    if result.exit_code == 3 and "importer" in result.output.lower():
        pytest.skip(f"nsys found but its importer cannot run here: {result.output.strip()[-300:]}")
    assert result.exit_code == 0, result.output
    assert "vecadd_grid" in result.output


def test_nsys_without_nsys_falls_back_to_the_pytorch_profiler(tmp_path, monkeypatch):
    pytest.importorskip("torch", reason="the fallback profiler is PyTorch's")

    def not_found(explicit=None):
        raise EnvironmentProblem("nsys (Nsight Systems) was not found on PATH, in $CUDA_HOME or next to ncu")

    # Hidden at the finder: emptying PATH and $CUDA_HOME as the CPU tests do would also hide the CUDA
    # headers CuPy compiles the variant with, in this same process.
    monkeypatch.setattr(nsys_tool, "find_nsys", not_found)
    out = tmp_path / "o"
    result = invoke("nsys", "vecadd", "-v", "grid", "-s", SMALL, "--wide", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.count("nsys was not found") == 1 and "PyTorch profiler (CUPTI)" in result.output
    assert "vecadd_grid" in result.output
    assert (out / "vecadd-grid.trace.json").is_file()


def test_ncu_family_json_has_one_kernel_with_duration_and_dram_bytes(tmp_path):
    needs("ncu")
    result = invoke("ncu", "vecadd", "-v", "grid", "-s", SMALL, "--out", str(tmp_path / "o"), "--json", "-")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema"] == "gpuprof.ncu"
    (variant,) = document["run"]["results"]
    assert variant["label"] == "grid" and variant["error"] is None
    (kernel,) = variant["rows"]
    assert kernel["kernel_name"] == "vecadd_grid"
    assert kernel["duration_ns"] > 0 and kernel["dram_bytes"] > 0


def test_sanitize_memcheck_of_a_builtin_variant_is_clean(tmp_path):
    needs("compute-sanitizer")
    result = invoke("sanitize", "vecadd", "-v", "grid", "--tool", "memcheck", "--out", str(tmp_path / "o"),
                    "--json", "-")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema"] == "gpuprof.sanitize" and document["runs"]
    for run in document["runs"]:
        assert run["tool"] == "memcheck" and "grid" in run["label"]
        assert run["error"] is None and run["findings"] == [] and not run["error_count"], run


def test_sanitize_memcheck_finds_the_known_bad_kernel_and_exits_1(tmp_path):
    needs("compute-sanitizer")
    bad = KERNELS / "oob_write.cu"
    result = invoke("sanitize", "vecadd", "-v", "grid", "--add", str(bad), "--tool", "memcheck",
                    "--out", str(tmp_path / "o"), "--json", "-")
    assert result.exit_code == 1, result.output
    runs = json.loads(result.stdout)["runs"]
    (oob,) = [r for r in runs if "oob_write" in r["label"]]
    assert oob["error"] is None, oob["error"]
    bug_line = next(i for i, line in enumerate(bad.read_text().splitlines(), 1) if "// BUG" in line)
    writes = [f for f in oob["findings"] if f["kind"] == "invalid_write"]
    assert writes and all(f["size"] == 4 for f in writes)
    assert {(Path(f["file"]).name, f["line"]) for f in writes if f["file"]} == {("oob_write.cu", bug_line)}
    grid = [r for r in runs if "oob_write" not in r["label"]]
    assert grid and all(r["findings"] == [] for r in grid)  # the built-in next to it stays clean
    assert "oob_write" in result.stderr  # the one error line names the dirty run
