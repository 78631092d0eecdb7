"""On a GPU: `gpuprof ncu -- / nsys -- / profile --` on a program gpuprof did not write, a 10-layer
MLP (tests/programs/mlp10.py): one row per distinct kernel, readable names, warm-ups controllable.

The wall times are printed (pytest -s) for docs/PERFORMANCE.md; issue 14 asks for <= 30 s each."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuprof.analysis.kernel_summary import summarize_kernels
from gpuprof.commands.ncu import profile_command
from gpuprof.render.kernel_names import short_names
from gpuprof.tools.ncu import NcuOptions

pytestmark = pytest.mark.gpu
MLP = Path(__file__).resolve().parent.parent / "programs" / "mlp10.py"
COMMAND = [sys.executable, str(MLP)]


def needs(*modules_or_tools: str) -> None:
    for name in modules_or_tools:
        if name in ("ncu", "nsys"):
            if shutil.which(name) is None:
                pytest.skip(f"{name} is not on PATH")
        else:
            pytest.importorskip(name)


def gpuprof(*args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpuprof", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "100"}, check=False)
    return done, time.perf_counter() - start


def test_ncu_summarises_each_distinct_kernel_of_the_mlp_once(tmp_path):
    needs("torch", "ncu")
    options = NcuOptions(launch_skip=2, launch_count=2, per_kernel=True)  # skip 2 warm-ups of each, profile 2
    start = time.perf_counter()
    run = profile_command(COMMAND, tmp_path, options)
    elapsed = time.perf_counter() - start
    rows = [r for res in run.results for r in res.rows]
    summaries = summarize_kernels(rows)
    print(f"\nncu -- mlp10.py: {len(rows)} launches, {len(summaries)} kernels in {elapsed:.1f} s")
    assert summaries and len({s.name for s in summaries}) == len(summaries)
    configs = {(r.demangled_name, r.grid, r.block) for r in rows}
    assert len(rows) <= 2 * len(configs)  # the per-configuration filter held
    assert summaries[0].share_pct >= summaries[-1].share_pct
    gemm = [s for s in summaries if "gemm" in s.name.lower()]
    assert gemm and gemm[0] is summaries[0]  # the Linear layers' GEMM takes most of the time
    names = short_names([s.name for s in summaries])
    assert all(len(n) <= 60 and not n.endswith("…") for n in names.values())


def test_ncu_cli_prints_one_row_per_kernel_within_100_columns(tmp_path):
    needs("torch", "ncu")
    done, elapsed = gpuprof("ncu", "--launch-skip", "2", "--out", str(tmp_path), "--", *COMMAND)
    print(f"\ngpuprof ncu -- mlp10.py: {elapsed:.1f} s\n{done.stdout}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kernels," in done.stdout and "launches profiled" in done.stdout
    assert done.stdout.count("reports:") == 1


def test_nsys_summary_of_the_mlp(tmp_path):
    needs("torch")
    out = tmp_path / "n.json"
    done, elapsed = gpuprof("nsys", "--out", str(tmp_path / "o"), "--json", str(out), "--", *COMMAND)
    print(f"\ngpuprof nsys -- mlp10.py: {elapsed:.1f} s\n{done.stdout}")
    assert done.returncode == 0, done.stdout + done.stderr
    kernels = json.loads(out.read_text())["summaries"][0]["kernels"]
    assert kernels and len({k["name"] for k in kernels}) == len(kernels)
    assert any("gemm" in k["name"].lower() for k in kernels[:2])


def test_profile_picks_the_gemm_and_explains_it(tmp_path):
    needs("torch", "ncu")
    out = tmp_path / "p.json"
    done, elapsed = gpuprof("profile", "--out", str(tmp_path / "o"), "--json", str(out), "--", *COMMAND)
    print(f"\ngpuprof profile -- mlp10.py: {elapsed:.1f} s\n{done.stdout}")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text())
    assert data["top_kernels"] and "gemm" in data["top_kernels"][0].lower()
    assert data["covered_pct"] >= 80 or len(data["top_kernels"]) == 5
    profiled = {k["base_name"] for k in data["ncu_kernels"]}
    assert profiled, data["ncu_problem"]
    assert "1. Where the GPU time goes" in done.stdout and "2. Why" in done.stdout
