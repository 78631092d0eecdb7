"""`gpuprof doctor` lists every tool with a verdict and says what to do about each gap."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands import doctor


def test_doctor_json_names_every_check_and_exits_3_when_something_is_missing(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no nvcc, ncu, nsys or compute-sanitizer
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    monkeypatch.setattr(doctor, "gpu", lambda: doctor.Check("CUDA GPU", False, "no CUDA GPU", "run"))
    result = CliRunner().invoke(app, ["doctor", "--json", "-"])
    assert result.exit_code == 3  # a GPU and nvcc are required
    document = json.loads(result.stdout)
    assert document["schema"] == "gpuprof.doctor" and document["ok"] is False
    checks = {c["name"]: c for c in document["checks"]}
    assert checks["CUDA GPU"]["required"] and checks["nvcc"]["required"] and not checks["ncu"]["required"]
    assert {"CUDA GPU", "nvcc", "ncu", "nsys", "compute-sanitizer", "performance counters"} <= set(checks)
    assert not checks["ncu"]["ok"] and "--ncu PATH" in checks["ncu"]["detail"]
    assert not checks["compute-sanitizer"]["ok"] and "--sanitizer PATH" in checks["compute-sanitizer"]["detail"]
    assert "Traceback" not in result.output


def test_counters_admin_only_is_reported_with_the_fix(tmp_path, monkeypatch):
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    monkeypatch.setattr(doctor, "PROFILING_PARAMS", params)
    check = doctor.counters_permitted()
    assert not check.ok and "NVreg_RestrictProfilingToAdminUsers=0" in check.detail
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert doctor.counters_permitted().ok


def test_doctor_exits_0_when_only_optional_pieces_are_missing(monkeypatch):
    ok = doctor.Check("x", True, "fine", "run")
    monkeypatch.setattr(doctor, "gpu", lambda: doctor.Check("CUDA GPU", True, "H100 (sm_90, 132 SMs)", "run"))
    monkeypatch.setattr(doctor, "_tool", lambda name, *a, **k: doctor.Check(name, name == "nvcc", "12.8", "x"))
    monkeypatch.setattr(doctor, "torch_check", lambda gpu_found: doctor.Check("torch", False, "2.5+cpu is a CPU-only build", "vendor"))
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "CPU-only" in result.output
    assert ok.ok


def test_doctor_shows_install_lines_with_brackets_intact(monkeypatch):
    monkeypatch.setattr(doctor, "gpu", lambda: doctor.Check("CUDA GPU", False, "no CUDA GPU", "run"))
    monkeypatch.setattr(doctor, "_module", lambda name, needed, install, dist=None: doctor.Check(name, False, f"not installed: {install}", needed))
    from rich.console import Console

    import gpuprof.cli.device as device_cli

    monkeypatch.setattr(device_cli, "human_console", lambda target: Console(width=400))
    result = CliRunner().invoke(app, ["doctor"])
    assert "pip install 'gpuprof[plot]'" in result.output
    assert "pip install 'gpuprof[cuda13]' (or 'gpuprof[cuda12]')" in result.output


def test_doctor_reports_versions_of_installed_modules():
    check = doctor._module("numpy", "everything", "pip install numpy")
    assert check.ok and check.detail[0].isdigit()
