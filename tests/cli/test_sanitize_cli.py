"""`gpuprof sanitize -- python prog.py` without a GPU: a stand-in compute-sanitizer that behaves like
CuPy under it (compiles into the CUPY_CACHE_DIR it is given, saving the source) and prints a
recorded-format report naming NVRTC's hashed file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.tools import _proc
from gpuprof.tools import sanitizer as tool

HASH = "5f0c1e9a7b3d2c4e6f8091a2b3c4d5e6f7089a1b"
KERNEL = 'extern "C" __global__ void write_past(float* x, int n) {\n' \
         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n" \
         "    if (i <= n) x[i] = 1.0f;  // one past the end\n}\n"
REPORT = f"""========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at write_past(float *, int)+0x80 in {HASH}.cubin.cu:3
=========     by thread (0,0,0) in block (4,0,0)
=========     Access to 0x7f0000001000 is out of bounds
=========     and is 0 bytes after the nearest allocation at 0x7f0000000000 of size 4,096 bytes
=========
========= ERROR SUMMARY: 1 error
"""


class CupyUnderSanitizer:
    def __init__(self) -> None:
        self.envs: list[dict[str, str]] = []
        self.argvs: list[list[str]] = []

    def __call__(self, argv, *, timeout_s, cwd=None, env=None):
        self.envs.append(env)
        self.argvs.append(list(argv))
        cache = Path(env["CUPY_CACHE_DIR"])
        assert not any(cache.iterdir()), "the cache must be fresh, or CuPy saves no source"
        (cache / f"{HASH}.cubin").write_bytes(b"\0")
        (cache / f"{HASH}.cubin.cu").write_text(KERNEL)
        return _proc.Completed(list(argv), tool.FINDINGS_EXIT_CODE, REPORT, "")


@pytest.fixture
def sanitizer(monkeypatch):
    fake = CupyUnderSanitizer()
    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")
    monkeypatch.setattr(_proc, "run", fake)
    return fake


def test_sanitize_a_cupy_program_shows_the_kernels_real_line(sanitizer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prog = tmp_path / "cupy_oob.py"
    prog.write_text("import cupy\nsrc = r'''\n" + KERNEL + "'''\n")
    result = CliRunner().invoke(app, ["sanitize", "--tool", "memcheck", "--out", "out", "--", "python", "cupy_oob.py"])
    assert result.exit_code == 1, result.output
    out = " ".join(result.output.split())
    assert "cupy_oob.py:5" in out  # the line inside the program's own kernel string
    assert "if (i <= n) x[i] = 1.0f; // one past the end" in out
    assert f"NVRTC {HASH}.cubin.cu:3" in out
    assert "1 error printed" in out
    env = sanitizer.envs[0]
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tool.SITE_DIR)
    assert env["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1" and env["CUPY_CACHE_SAVE_CUDA_SOURCE"] == "1"
    assert sanitizer.argvs[0][-2:] == ["python", "cupy_oob.py"]


def test_each_tool_gets_its_own_fresh_cache(sanitizer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.py").write_text("pass\n")
    result = CliRunner().invoke(app, ["sanitize", "--tool", "memcheck,initcheck", "--out", "out",
                                      "--", "python", "p.py"])
    assert result.exit_code == 1, result.output
    caches = [e["CUPY_CACHE_DIR"] for e in sanitizer.envs]
    assert len(set(caches)) == 2
    # run again: the old cache is emptied first (the fake asserts it)
    result = CliRunner().invoke(app, ["sanitize", "--tool", "memcheck", "--out", "out", "--", "python", "p.py"])
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize("argv", [["vecadd", "--", "python", "p.py"], ["vecadd", "--jobs", "0"],
                                  ["--import", "missing.log", "vecadd"]])
def test_a_usage_error_draws_no_progress_bar_before_its_one_line(sanitizer, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["sanitize", *argv])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and sanitizer.argvs == []


def test_a_clean_racecheck_on_a_program_says_what_it_does_not_cover(monkeypatch, tmp_path):
    """The course's atomics lesson loses updates to a global counter and passes every tool (recorded
    on the H200); the table is followed by one line on racecheck's scope, only where racecheck ran."""
    clean = "========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")
    monkeypatch.setattr(_proc, "run", lambda argv, *, timeout_s, cwd=None, env=None:
                        _proc.Completed(list(argv), 0, clean, ""))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "atomicAdd").write_bytes(b"\x7fELF")
    (tmp_path / "atomicAdd").chmod(0o755)
    result = CliRunner().invoke(app, ["sanitize", "--tool", "racecheck", "--out", "out", "--", "./atomicAdd"])
    assert result.exit_code == 0, result.output
    assert "racecheck sees shared-memory hazards only" in " ".join(result.output.split())
    monkeypatch.setattr(_proc, "run", lambda argv, *, timeout_s, cwd=None, env=None: _proc.Completed(
        list(argv), 0, "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", ""))
    result = CliRunner().invoke(app, ["sanitize", "--tool", "memcheck", "--out", "out", "--", "./atomicAdd"])
    assert result.exit_code == 0, result.output
    assert "racecheck sees" not in result.output
