"""On a GPU with ncu: `gpuprof ncu --source` collects what it reads and names the user's lines, for a
family variant (NVRTC, gpuprof's #line name) and a plain program built with nvcc -lineinfo.

The wall times are printed (pytest -s) for docs/ncu-source.md."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]
PLAIN = REPO / "tests" / "programs" / "matmul_lineinfo.cu"
WARPTILE = REPO / "kernels" / "matmul" / "warptile.cu"


def needs(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not on PATH")


def gpuprof(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpuprof", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "100"}, check=False, cwd=REPO)
    print(f"gpuprof {' '.join(args)}: {time.perf_counter() - start:.1f} s")
    return done


def sources(done: subprocess.CompletedProcess) -> list[dict]:
    assert done.returncode == 0, done.stderr[-3000:]
    return [s for result in json.loads(done.stdout)["run"]["results"] for s in result["source"]]


def test_family_variant_lines_are_warptile_cu_lines(tmp_path):
    needs("ncu")
    done = gpuprof("ncu", "matmul", "-v", "warptile", "--source", "--out", str(tmp_path), "--json", "-")
    (source,) = sources(done)
    assert source["missing"] is None and source["samples"] > 0 and source["warp_states"]
    assert {line["file"] for line in source["lines"]} == {"kernels/matmul/warptile.cu"}
    text = WARPTILE.read_text().splitlines()
    assert all(line["text"] == text[line["line"] - 1].strip() for line in source["lines"])
    hottest = max(source["lines"], key=lambda line: line["samples"])
    print(f"warptile hottest: {hottest['line']} {hottest['text']} {list(hottest['stalls'])[:3]}")
    assert "SourceCounters" in done.stderr and "warptile.cu:" in done.stderr  # the note, then the table


def test_plain_program_built_with_lineinfo_names_its_lines(tmp_path, nvcc_available):
    needs("ncu")
    program = tmp_path / "matmul_lineinfo"
    subprocess.run([nvcc_available, "-O3", "-arch=native", "-lineinfo", "-o", str(program), str(PLAIN)],
                   check=True, capture_output=True, timeout=300)
    done = gpuprof("ncu", "--source", "--out", str(tmp_path / "out"), "--json", "-", "--", str(program), "1024")
    by_kernel = {s["kernel_name"].split("(")[0]: s for s in sources(done)}
    assert set(by_kernel) == {"matmul_naive", "matmul_tiled"}
    for source in by_kernel.values():
        assert source["missing"] is None
        assert {Path(line["file"]).name for line in source["lines"]} == {"matmul_lineinfo.cu"}
    naive = max(by_kernel["matmul_naive"]["lines"], key=lambda line: line["samples"])
    assert (naive["line"], naive["text"]) == (18, "acc += A[row * n + k] * B[k * n + col];")
    human = gpuprof("ncu", "--source", "--out", str(tmp_path / "again"), "--", str(program), "1024")
    assert human.returncode == 0 and "matmul_lineinfo.cu:18" in human.stdout
    assert all(len(line) <= 100 for line in human.stdout.splitlines() if not line.startswith("reports: "))
