"""gpuprof's CUPTI injection library on a CPU machine: finding CUPTI (toolkit or pip wheel), building
the library with the toolkit's headers (skipped where CUPTI or g++ is missing), its cache, and its
file-writing path called as the CUDA driver and NVTX call it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof.errors import EnvironmentProblem
from gpuprof.parsers import cupti_activity as ca
from gpuprof.tools import cupti as tool


def fake_cupti(root: Path, include: str, lib: str, version: int = 130001, soname: str = "libcupti.so.13") -> None:
    (root / include).mkdir(parents=True, exist_ok=True)
    (root / include / "cupti.h").write_text("#include <cupti_version.h>\n")
    (root / include / "cupti_version.h").write_text(f"#define CUPTI_API_VERSION {version}\n")
    (root / lib).mkdir(parents=True, exist_ok=True)
    (root / lib / soname).write_bytes(b"\x7fELF")


@pytest.fixture
def no_nvcc(monkeypatch):
    monkeypatch.setattr(tool.shutil, "which", lambda name: None)


def test_the_toolkits_extras_cupti_is_found_with_its_library(tmp_path, no_nvcc):
    fake_cupti(tmp_path / "cuda", "extras/CUPTI/include", "extras/CUPTI/lib64")
    (tmp_path / "cuda" / "include").mkdir()
    (tmp_path / "cuda" / "include" / "cuda.h").write_text("")
    found = tool.find_cupti(tmp_path / "cuda", sites=[])
    assert found.include == tmp_path / "cuda" / "extras" / "CUPTI" / "include"
    assert found.library == tmp_path / "cuda" / "extras" / "CUPTI" / "lib64" / "libcupti.so.13"
    assert found.major == 13 and found.extra_includes == (tmp_path / "cuda" / "include",)


def test_a_pip_wheels_cupti_is_found_where_the_toolkit_has_none(tmp_path, no_nvcc):
    fake_cupti(tmp_path / "site", "nvidia/cu13/include", "nvidia/cu13/lib")
    found = tool.find_cupti(tmp_path / "no-cuda", sites=[tmp_path / "site"])
    assert found.library == tmp_path / "site" / "nvidia" / "cu13" / "lib" / "libcupti.so.13"


def test_a_library_of_another_major_version_is_not_paired_with_the_headers(tmp_path, no_nvcc):
    fake_cupti(tmp_path / "cuda", "include", "lib64", version=130001, soname="libcupti.so.12")
    with pytest.raises(EnvironmentProblem, match="CUPTI was not found"):
        tool.find_cupti(tmp_path / "cuda", sites=[])


def test_no_cupti_anywhere_is_one_environment_line_naming_where_it_looked(tmp_path, no_nvcc):
    with pytest.raises(EnvironmentProblem) as caught:
        tool.find_cupti(tmp_path / "cuda", sites=[tmp_path])
    assert str(tmp_path / "cuda") in caught.value.message and "nvidia-cuda-cupti" in caught.value.message


def test_a_failed_build_says_why_in_one_line_and_leaves_nothing_behind(tmp_path, monkeypatch):
    compiler = tmp_path / "fake-g++"
    compiler.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "fake 1.0"; exit 0; fi\n'
                        'echo "gpuprof_cupti.cpp:1: fatal error: cupti.h: No such file or directory" >&2\nexit 1\n')
    compiler.chmod(0o755)
    monkeypatch.setattr(tool, "host_compiler", lambda: str(compiler))
    install = tool.CuptiInstall(tmp_path / "inc", tmp_path / "lib" / "libcupti.so.13", 130001)
    with pytest.raises(EnvironmentProblem, match="fake-g\\+\\+ could not build .*cupti.h: No such file"):
        tool.injection_library(install, cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_environment_loads_the_library_for_cuda_and_nvtx(tmp_path):
    env = tool.injection_env(Path("/lib/x.so"), tmp_path / "rec", base={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "CUDA_INJECTION64_PATH": "/lib/x.so", "NVTX_INJECTION64_PATH": "/lib/x.so",
                   tool.OUT_ENV: str((tmp_path / "rec").resolve())}


def test_the_library_builds_here_and_is_reused(cupti_injection, tmp_path, monkeypatch):
    install, _ = cupti_injection
    library = tool.injection_library(install, cache_dir=tmp_path / "cache")
    assert library.is_file() and library.parent == tmp_path / "cache"
    monkeypatch.setattr(tool, "build_argv", lambda *a: pytest.fail("a cached library is not built again"))
    assert tool.injection_library(install, cache_dir=tmp_path / "cache") == library


CALL_AS_CUDA_AND_NVTX = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
getter = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)(lambda table: None)
lib.InitializeInjectionNvtx2(getter)  # NVTX's first range comes before CUDA starts
assert lib.InitializeInjection() == 1  # then the driver's cuInit
"""


def test_the_library_writes_a_finished_activity_file_at_exit(cupti_injection, tmp_path):
    """Called as NVTX and the driver call it; without a GPU CUPTI refuses the activity kinds (warnings),
    with one it records: either way the file is finished at exit and reads back."""
    _, library = cupti_injection
    out = tmp_path / "rec"
    out.mkdir()
    done = subprocess.run([sys.executable, "-c", CALL_AS_CUDA_AND_NVTX, str(library)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, tool.OUT_ENV: str(out)}, check=False)
    assert done.returncode == 0, done.stderr
    (written,) = ca.activity_files(out)
    assert written.suffix == ".jsonl"  # renamed at exit: no longer .partial
    activity = ca.read_activity([written])
    assert activity.unfinished == () and activity.cupti_version == cupti_injection[0].api_version


def test_outside_gpuprof_the_library_records_nothing(cupti_injection, tmp_path):
    _, library = cupti_injection
    env = {k: v for k, v in os.environ.items() if k != tool.OUT_ENV}
    done = subprocess.run([sys.executable, "-c", CALL_AS_CUDA_AND_NVTX, str(library)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []
