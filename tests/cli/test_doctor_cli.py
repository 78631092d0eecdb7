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
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 3
    checks = {c["name"]: c for c in json.loads(result.stdout)}
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
