"""`gpuprof doctor` lists every tool with a verdict and says what to do about each gap.

Each test stands in for what doctor probes (the GPU, the Python modules, the tools, the driver's
counter setting), so the outcome is the same whatever this machine has installed."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

import gpuprof.cli.device as device_cli
from gpuprof.cli import app
from gpuprof.commands import doctor

H100 = doctor.Check("CUDA GPU", True, "H100 (sm_90, 132 SMs)", "run")
NO_GPU = doctor.Check("CUDA GPU", False, "no CUDA GPU", "run")


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A machine with every module installed and counters open to all; tests take pieces away."""
    installed = {"cupy", "torch", "triton", "ncu_report", "pynvml", "matplotlib", "NVRTC"}
    monkeypatch.setattr(doctor, "_module", lambda name, needed, install, dist=None: doctor.Check(
        name, name in installed, "1.0" if name in installed else f"not installed: {install}", needed))
    monkeypatch.setattr(doctor, "nvrtc", lambda: doctor.Check(
        "NVRTC", "NVRTC" in installed, "13.0" if "NVRTC" in installed else "libnvrtc does not load", "run"))
    monkeypatch.setattr(doctor, "cupti_injection", lambda: doctor.Check(
        "CUPTI injection", True, "gpuprof_cupti-13-0123.so (cached) built against libcupti.so.13", "nsys"))
    params = tmp_path / "params"
    params.write_text("RmProfilingAdminOnly: 0\n")
    monkeypatch.setattr(doctor, "PROFILING_PARAMS", params)
    monkeypatch.setattr(device_cli, "human_console", lambda target: Console(width=400))
    return installed


def tools(monkeypatch, present: set[str]) -> None:
    monkeypatch.setattr(doctor, "_tool", lambda name, *a, **k: doctor.Check(
        name, name in present, "12.8 at /usr/local/cuda/bin" if name in present else f"{name} is not on PATH", "x"))


def doctor_json() -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["doctor", "--json", "-"])
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.stdout)


def test_doctor_json_names_every_check_and_exits_3_when_something_is_missing(machine, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # the real finders: no nvcc, ncu or compute-sanitizer
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    monkeypatch.setattr(doctor, "gpu", lambda: NO_GPU)
    code, document = doctor_json()
    assert code == 3  # a GPU and nvcc are required
    assert document["schema"] == "gpuprof.doctor" and document["ok"] is False
    checks = {c["name"]: c for c in document["checks"]}
    assert checks["CUDA GPU"]["required"] and checks["nvcc"]["required"] and not checks["ncu"]["required"]
    assert {"CUDA GPU", "nvcc", "ncu", "nsys", "compute-sanitizer", "performance counters"} <= set(checks)
    assert not checks["nvcc"]["ok"]
    assert not checks["ncu"]["ok"] and "--ncu PATH" in checks["ncu"]["detail"]
    assert not checks["compute-sanitizer"]["ok"] and "--sanitizer PATH" in checks["compute-sanitizer"]["detail"]


def test_counters_admin_only_is_reported_with_the_fix(tmp_path, monkeypatch):
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    monkeypatch.setattr(doctor, "PROFILING_PARAMS", params)
    check = doctor.counters_permitted()
    assert not check.ok and "NVreg_RestrictProfilingToAdminUsers=0" in check.detail
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert doctor.counters_permitted().ok
    params.unlink()
    assert not doctor.counters_permitted().ok  # no driver: unknown is not "open"


def test_doctor_exits_0_when_only_optional_pieces_are_missing(machine, monkeypatch):
    monkeypatch.setattr(doctor, "gpu", lambda: H100)
    tools(monkeypatch, {"nvcc"})  # ncu, nsys, compute-sanitizer missing: optional
    machine.difference_update({"triton", "matplotlib"})
    monkeypatch.setattr(doctor, "torch_check", lambda gpu_found: doctor.Check(
        "torch", False, "2.5+cpu is a CPU-only build", "vendor"))
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "CPU-only" in result.output
    code, document = doctor_json()
    assert code == 0 and document["ok"] is True
    missing = {c["name"] for c in document["checks"] if not c["ok"]}
    assert missing == {"torch", "triton", "ncu", "nsys", "compute-sanitizer", "matplotlib"}
    assert not any(c["required"] for c in document["checks"] if not c["ok"])


@pytest.mark.parametrize("required", ["cupy", "nvcc", "CUDA GPU", "NVRTC"])
def test_doctor_exits_3_when_one_required_piece_is_missing(machine, monkeypatch, required):
    monkeypatch.setattr(doctor, "gpu", lambda: NO_GPU if required == "CUDA GPU" else H100)
    tools(monkeypatch, {"ncu", "nsys", "compute-sanitizer"} | ({"nvcc"} - {required}))
    machine.discard(required)
    monkeypatch.setattr(doctor, "torch_check", lambda gpu_found: doctor.Check("torch", True, "2.5", "vendor"))
    code, document = doctor_json()
    assert code == 3 and document["ok"] is False
    assert [c["name"] for c in document["checks"] if not c["ok"]] == [required]


def test_doctor_shows_install_lines_with_brackets_intact(machine, monkeypatch):
    monkeypatch.setattr(doctor, "gpu", lambda: NO_GPU)
    tools(monkeypatch, set())
    machine.clear()
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 3
    assert "pip install 'gpuprof[plot]'" in result.output
    assert "pip install 'gpuprof[cuda13]' (or 'gpuprof[cuda12]')" in result.output


def test_torch_check_flags_a_cpu_only_build_only_where_there_is_a_gpu(machine, monkeypatch):
    import sys
    from types import SimpleNamespace

    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(version=SimpleNamespace(cuda=None)))
    assert doctor.torch_check(gpu_found=False).ok  # without a GPU a CPU build is all there can be
    check = doctor.torch_check(gpu_found=True)
    assert not check.ok and "CPU-only" in check.detail
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(version=SimpleNamespace(cuda="13.0")))
    assert doctor.torch_check(gpu_found=True).ok
    machine.discard("torch")
    assert not doctor.torch_check(gpu_found=True).ok


def test_doctor_reports_versions_of_installed_modules():
    check = doctor._module("numpy", "everything", "pip install numpy")  # numpy is a dependency: always there
    assert check.ok and check.detail[0].isdigit()
    missing = doctor._module("gpuprof_no_such_module", "nothing", "pip install nothing")
    assert not missing.ok and missing.detail == "not installed: pip install nothing"


def test_nvrtc_is_listed_with_the_version_the_library_reports(monkeypatch):
    """The check itself, with CuPy's binding stood in for: loaded (version and file), or not."""
    from types import SimpleNamespace

    import gpuprof.variants.nvrtc as nvrtc_module

    monkeypatch.setattr(nvrtc_module, "nvrtc_library", lambda: SimpleNamespace(getVersion=lambda: (13, 0)))
    monkeypatch.setattr(doctor, "_loaded_from", lambda stem: "/usr/local/cuda/lib64/libnvrtc.so.13")
    check = doctor.nvrtc()
    assert check.ok and check.detail == "13.0 at /usr/local/cuda/lib64/libnvrtc.so.13" and "run" in check.needed_for
    monkeypatch.setattr(nvrtc_module, "nvrtc_library", lambda: None)
    check = doctor.nvrtc()
    assert not check.ok and "does not load" in check.detail and "nvidia-cuda-nvrtc" in check.detail



def test_loaded_from_names_no_library_this_process_has_not_loaded():
    assert doctor._loaded_from("libgpuprof_no_such_library") is None


def test_timeline_sources_are_listed_in_the_order_they_are_tried():
    nsys, cupti, missing = doctor.Check("nsys", True, "", ""), doctor.Check("c", True, "", ""), doctor.Check(
        "x", False, "", "")
    stock_importer = doctor.Check("nsys importer", False, "cannot load libdw.so.1", "")
    sources = doctor.timeline_sources(nsys, stock_importer, cupti, cupti, gpu_found=True)
    assert sources.ok and sources.detail == ("CUPTI injection (any program), then PyTorch profiler (Python "
                                             "programs, families)")
    assert doctor.timeline_sources(nsys, None, missing, missing, gpu_found=False).detail == "nsys (once a GPU is here)"
    none = doctor.timeline_sources(missing, None, missing, missing, gpu_found=True)
    assert not none.ok and "Nsight Systems" in none.detail and "CUPTI" in none.detail


def test_the_cupti_check_says_why_the_library_cannot_be_had(monkeypatch):
    from gpuprof.commands import nsys_cupti
    from gpuprof.errors import EnvironmentProblem

    def no_cupti():
        raise EnvironmentProblem("CUPTI was not found (cupti.h with a libcupti.so of the same version)")

    monkeypatch.setattr(nsys_cupti, "prepare", no_cupti)
    check = doctor.cupti_injection()
    assert not check.ok and check.detail.startswith("CUPTI was not found")
