"""A timeline on a stock machine: nsys is found (the copy inside Nsight Compute) but its importer
cannot turn the recording into a report. `gpuprof nsys -- python …`, `gpuprof nsys FAMILY` and
`gpuprof profile -- python …` then fall back to the PyTorch profiler with one note saying why and
how to get nsys working; `--nsys PATH` keeps nsys's own error. The stand-in nsys answers
`nsys profile` with the console output recorded on the H100 without libdw/libelf
(tests/nsys_fakes.py); the PyTorch-profiler child answers with a trace recorded there."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands import doctor, nsys_torch_fallback
from gpuprof.commands import nsys as nsys_core
from gpuprof.tools import _proc
from gpuprof.tools import nsys as tools
from tests.ncu_full_reports import requires_ncu_report
from tests.nsys_fakes import PROFILE_IMPORTER_FAILED

TOOLS = Path(__file__).resolve().parent.parent / "fixtures" / "tools"
TRACE = TOOLS / "torch-2.11.0__vecadd-torch.trace.json"
REPORT = TOOLS / "ncu-2025.3.1__launch_vecadd_torch.ncu-rep"
REAL_RUN = _proc.run
FOUND_NSYS = "/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"


class StockMachine:
    """nsys records but cannot import; the PyTorch-profiler child and ncu answer as on the H100."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, argv, *, timeout_s, cwd=None, env=None):
        argv = list(argv)
        self.calls.append(argv)
        if argv[0] == FOUND_NSYS and argv[1] == "profile":
            out, err = PROFILE_IMPORTER_FAILED
            return _proc.Completed(argv, 0, out, err)
        if argv[1:3] == ["-m", "gpuprof.tools.torch_child"]:
            shutil.copyfile(TRACE, argv[3])
            return _proc.Completed(argv, 0, "", "")
        if argv[1:3] == ["-m", "gpuprof.parsers.ncu_rep"]:
            return REAL_RUN(argv, timeout_s=timeout_s, cwd=cwd, env=env)
        assert argv[0].endswith("ncu"), argv
        shutil.copyfile(REPORT, argv[argv.index("--export") + 1] + ".ncu-rep")
        return _proc.Completed(argv, 0, "", "==PROF== Disconnected\n")

    def verbs(self) -> list[str]:
        return [("nsys " + a[1]) if a[0] == FOUND_NSYS else "torch" if "gpuprof.tools.torch_child" in a else "other"
                for a in self.calls]


@pytest.fixture
def stock(monkeypatch) -> StockMachine:
    machine = StockMachine()
    monkeypatch.setattr(nsys_core.tools, "find_nsys", lambda explicit=None: str(explicit or FOUND_NSYS))
    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")
    monkeypatch.setattr(_proc, "run", machine)
    return machine


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "100"})
    assert "Traceback" not in result.output
    return result


def notes(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("note:")]


def assert_one_fallback_note(result) -> None:
    said = " ".join(result.stderr.split())
    assert len(notes(result)) == 1 and said.count("could not make a report") == 1
    assert FOUND_NSYS in said and "Importer error status" in said  # why, in nsys's words
    assert "apt-get install libdw1 libelf1" in said and "--lib-path" in said and "GPUPROF_NSYS_LIBS" in said
    assert "gpuprof doctor" in said


def test_nsys_command_falls_back_to_the_pytorch_profiler_with_one_note(stock, tmp_path):
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--", sys.executable, "app.py")
    assert result.exit_code == 0, result.output
    assert stock.verbs() == ["nsys profile", "torch"]  # nsys tried once, then the fallback
    assert_one_fallback_note(result)
    out = " ".join(result.stdout.split())
    assert "vectorized_elementwise_kernel" in out and "init_curand" in out
    assert "in place of nsys (the nsys found cannot make a report here)" in out
    assert "GPU idle" in out and "host-bound" in out


def test_nsys_json_says_which_source_and_why(stock, tmp_path):
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--json", "-", "--", sys.executable, "app.py")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["source"] == "torch" and document["fallback_why"] == "the nsys found cannot make a report here"
    idle = document["summaries"][0]["idle"]
    assert idle["span_ns"] > idle["busy_ns"] > 0
    assert idle["host_bound_ns"] + idle["launch_gap_ns"] + idle["other_ns"] == pytest.approx(
        idle["span_ns"] - idle["busy_ns"])


def test_nsys_family_falls_back_too(stock, tmp_path, monkeypatch):
    def record(run, trace, ranges):
        shutil.copyfile(TRACE, trace)
        return trace

    monkeypatch.setattr(nsys_torch_fallback, "_torch_version", lambda missing: "2.11.0+cu130")
    monkeypatch.setattr(nsys_torch_fallback, "record_torch_trace", record)
    result = invoke("nsys", "vecadd", "--variants", "grid,vectorized", "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    assert stock.verbs() == ["nsys profile"]  # the first variant showed nsys cannot report: no second try
    assert_one_fallback_note(result)
    out = " ".join(result.stdout.split())
    assert "vecadd/grid" in out and "vecadd/vectorized" in out and "torch.profiler 2.11.0+cu130" in out


def test_an_nsys_the_user_named_keeps_its_own_error(stock, tmp_path):
    result = invoke("nsys", "--nsys", FOUND_NSYS, "--out", str(tmp_path / "o"), "--", sys.executable, "app.py")
    assert result.exit_code == 3
    assert "libdw.so.1" in result.stderr and notes(result) == []


def test_a_program_the_fallback_cannot_run_gets_the_importer_message(stock, tmp_path):
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--", "/bin/true")
    assert result.exit_code == 3
    said = " ".join(result.stderr.split())
    assert "libdw.so.1" in said and "runs only Python programs" in said


@requires_ncu_report
def test_profile_completes_on_the_fallback_timeline_and_says_which_source(stock, tmp_path):
    out_json = tmp_path / "p.json"
    result = invoke("profile", "--out", str(tmp_path / "o"), "--json", str(out_json), "--",
                    sys.executable, "examples/mlp.py")
    assert result.exit_code == 0, result.output
    assert_one_fallback_note(result)
    out = " ".join(result.stdout.split())
    assert "timeline source: torch.profiler (CUPTI) in place of nsys (the nsys found cannot make a report here)" in out
    assert "GPU idle" in out and "2. Why" in out
    data = json.loads(out_json.read_text())
    assert data["timeline_source"] == "torch" and data["timeline"]["summaries"][0]["idle"] is not None


# ------------------------------------------------------------------ doctor: the importer's libraries


@pytest.fixture
def bundle(tmp_path) -> Path:
    """An Nsight Compute-like layout: host/target-linux-x64/nsys and host/linux-desktop-…/QdstrmImporter."""
    nsys = tmp_path / "host" / "target-linux-x64" / "nsys"
    importer = tmp_path / "host" / "linux-desktop-glibc_2_11_3-x64" / "QdstrmImporter"
    for path in (nsys, importer):
        path.parent.mkdir(parents=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    return nsys


def test_importer_libraries_come_from_ldd(bundle, monkeypatch):
    monkeypatch.setattr(tools.shutil, "which", lambda name: "/usr/bin/ldd" if name == "ldd" else None)
    seen = []

    def ldd(argv, *, timeout_s, cwd=None, env=None):
        seen.append(argv)
        return _proc.Completed(argv, 0, "\tlibdw.so.1 => not found\n\tlibelf.so.1 => not found\n"
                               "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n", "")

    monkeypatch.setattr(_proc, "run", ldd)
    importer, missing = tools.missing_importer_libraries(bundle)
    assert importer is not None and importer.name == "QdstrmImporter" and seen == [["/usr/bin/ldd", str(importer)]]
    assert missing == ["libdw.so.1", "libelf.so.1"]


def test_doctor_says_the_fix_when_the_importer_cannot_load_its_libraries(bundle, monkeypatch):
    monkeypatch.setattr(tools, "find_nsys", lambda explicit=None: str(bundle))
    monkeypatch.setattr(tools, "missing_importer_libraries", lambda nsys, env=None: (Path("/x/QdstrmImporter"),
                                                                                     ["libdw.so.1", "libelf.so.1"]))
    check = doctor.nsys_importer(doctor.Check("nsys", True, "2025.3.1", "gpuprof nsys"))
    assert check is not None and not check.ok and check.name == "nsys importer"
    assert "cannot load libdw.so.1, libelf.so.1" in check.detail and "apt-get install libdw1 libelf1" in check.detail
    assert "PyTorch profiler" in check.detail
    monkeypatch.setattr(tools, "missing_importer_libraries", lambda nsys, env=None: (Path("/x/QdstrmImporter"), []))
    ok = doctor.nsys_importer(doctor.Check("nsys", True, "2025.3.1", "gpuprof nsys"))
    assert ok is not None and ok.ok and "/x/QdstrmImporter" in ok.detail
    assert doctor.nsys_importer(doctor.Check("nsys", False, "not found", "gpuprof nsys")) is None
