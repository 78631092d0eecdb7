"""On a GPU: the CUPTI timeline source (gpuprof's injection library) on a plain CUDA C++ program with
NVTX ranges (examples/nvtx_matmul.cu), in this process and as a user types `gpuprof nsys -- ./prog`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof.commands import nsys_cupti
from gpuprof.parsers import cupti_activity

pytestmark = pytest.mark.gpu
PROGRAM = Path(__file__).resolve().parents[2] / "examples" / "nvtx_matmul.cu"
N = 512


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    out = tmp_path_factory.mktemp("prog") / "nvtx_matmul"
    done = subprocess.run([nvcc, "-O2", "-lineinfo", "-arch=native", "-o", str(out), str(PROGRAM)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return out


def test_the_injection_records_kernels_copies_calls_and_nvtx_ranges(program, cupti_injection, tmp_path):
    install, library = cupti_injection
    result = nsys_cupti.profile_command([str(program), str(N)], tmp_path, install, library, timeout_s=120)
    (summary,) = result.summaries
    assert result.source == "cupti" and summary.error is None, summary.error
    kernels = {k.name.split("(")[0].removeprefix("void ").strip(): k for k in summary.kernels}
    assert kernels["naive_matmul"].instances == 3 and kernels["tiled_matmul"].instances == 3
    copies = {m.operation: m.count for m in summary.memcpy or ()}
    assert copies["[CUDA memcpy Host-to-Device]"] == 2 and copies["[CUDA memcpy Device-to-Host]"] == 2
    assert copies["[CUDA memset]"] == 2
    calls = {a.name for a in summary.api or ()}
    assert {"cudaMalloc", "cudaMemcpy", "cudaLaunchKernel"} <= calls
    ranges = {r.name for r in summary.nvtx or ()}
    assert {"setup", "copy_in", "matmul", "naive", "tiled", "copy_out", "check"} <= ranges
    by_range = {g.range: {k.name.split("(")[0].removeprefix("void ") for k in g.kernels}
                for g in summary.kernels_by_range or ()}
    assert by_range["matmul/naive"] == {"naive_matmul"} and by_range["matmul/tiled"] == {"tiled_matmul"}
    assert summary.idle is not None and summary.idle.busy_ns > 0 and summary.idle.host_calls_known
    (activity_file,) = cupti_activity.activity_files(tmp_path / "command-nvtx_matmul.cupti")
    assert activity_file.name.endswith(".jsonl")  # the program exited normally: the file was finished


def test_gpuprof_nsys_on_a_cpp_program_gives_tables_and_says_its_source(program, tmp_path):
    done = subprocess.run([sys.executable, "-m", "gpuprof", "nsys", "--out", str(tmp_path / "o"), "--json", "-",
                           "--", str(program), str(N)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "100"}, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["source"] in ("nsys", "cupti")  # nsys where it can make a report here
    (summary,) = document["summaries"]
    names = " ".join(k["name"] for k in summary["kernels"])
    assert "naive_matmul" in names and "tiled_matmul" in names
    assert summary["idle"] is not None and summary["nvtx"]


def test_a_familys_variants_through_cupti_each_in_its_own_launch_child(tmp_path, monkeypatch):
    """`gpuprof nsys FAMILY` where nsys is missing or cannot report: each variant's `gpuprof launch` child
    with the injection library, its own kernels among the child's. (The launch child's NVTX ranges do
    not reach CUPTI yet, recorded on the H200: docs/timeline-sources.md, "Known gap".)"""
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                               if not (Path(p) / "nsys").exists()))
    done = subprocess.run([sys.executable, "-m", "gpuprof", "nsys", "vecadd", "-v", "grid,vectorized", "--size",
                           "2^22", "--out", str(tmp_path / "o"), "--json", "-"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "100"},
                          check=False)
    document = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    if document.get("source") == "nsys":
        pytest.skip("an nsys that can make a report is found here (besides PATH)")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert document["source"] == "cupti", document.get("source")
    labels = [s["label"] for s in document["summaries"]]
    assert labels == ["grid", "vectorized"]
    for summary in document["summaries"]:
        assert summary["error"] is None, summary["error"]
        assert any(k["name"].startswith("vecadd") for k in summary["kernels"]), summary["kernels"]
