"""A timeline for a plain CUDA C++ program on a stock machine: nsys records but cannot make a report,
so `gpuprof nsys -- ./prog` and `gpuprof profile -- ./prog` run the program again with gpuprof's
CUPTI injection library, and say so once. The stand-in program writes the activity file recorded on
the H200 (tests/fixtures/cupti/) where the library would; nsys answers as on the H100 without
libdw/libelf (tests/nsys_fakes.py). The library itself is built in tests/commands/test_cupti_injection.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands import ncu as ncu_core
from gpuprof.commands import nsys as nsys_core
from gpuprof.commands import nsys_cupti
from gpuprof.errors import EnvironmentProblem
from gpuprof.tools import _proc
from gpuprof.tools import cupti as cupti_tool
from tests.nsys_fakes import PROFILE_IMPORTER_FAILED

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "cupti" / "nvtx_matmul-h200.activity.jsonl"
FOUND_NSYS = "/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"
LIBRARY = Path("/cache/gpuprof_cupti-13-0123.so")
INSTALL = cupti_tool.CuptiInstall(Path("/cuda/include"), Path("/cuda/lib64/libcupti.so.13"), 130001)


class StockMachine:
    """nsys records but cannot import; the program, run with the injection library, leaves the recorded
    activity file (or `leaves` says otherwise: None for a program that never started CUDA, "partial"
    for one that died)."""

    def __init__(self, program: Path) -> None:
        self.program = str(program)
        self.calls: list[tuple[list[str], dict[str, str] | None]] = []
        self.leaves: str | None = "finished"
        self.returncode = 0

    def __call__(self, argv, *, timeout_s, cwd=None, env=None, isolated=False):
        argv = list(argv)
        self.calls.append((argv, env))
        if argv[0] == FOUND_NSYS:
            out, err = PROFILE_IMPORTER_FAILED
            return _proc.Completed(argv, 0, out, err)
        assert argv[0] == self.program, argv
        folder = Path(env[cupti_tool.OUT_ENV])
        if self.leaves == "finished":
            shutil.copyfile(RECORDED, folder / "activity-2322.jsonl")
        elif self.leaves == "partial":  # died before its exit handler: no "end" line, never renamed
            lines = RECORDED.read_text().splitlines(keepends=True)
            (folder / "activity-2322.jsonl.partial").write_text("".join(lines[:-1]))
        return _proc.Completed(argv, self.returncode, "n=1024: naive and tiled agree\n", "")

    def verbs(self) -> list[str]:
        return ["nsys " + a[1] if a[0] == FOUND_NSYS else "program" for a, _ in self.calls]


@pytest.fixture
def program(tmp_path) -> Path:
    path = tmp_path / "nvtx_matmul"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def stock(monkeypatch, program) -> StockMachine:
    machine = StockMachine(program)
    monkeypatch.setattr(nsys_core.tools, "find_nsys", lambda explicit=None: str(explicit or FOUND_NSYS))
    monkeypatch.setattr(_proc, "run", machine)
    monkeypatch.setattr(nsys_cupti, "prepare", lambda: (INSTALL, LIBRARY))
    return machine


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "100"})
    assert "Traceback" not in result.output
    return result


def test_nsys_on_a_cpp_program_gives_every_table_from_cupti_with_one_note(stock, program, tmp_path):
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--", str(program))
    assert result.exit_code == 0, result.output
    assert stock.verbs() == ["nsys profile", "program"]  # nsys tried once, then the program with the library
    (_, env) = stock.calls[1]
    assert env is not None and env["CUDA_INJECTION64_PATH"] == str(LIBRARY) == env["NVTX_INJECTION64_PATH"]
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    said = " ".join(result.stderr.split())
    assert len(notes) == 1 and "CUPTI's activity API" in said and "apt-get install libdw1 libelf1" in said
    out = " ".join(result.stdout.split())
    for table in ("CUDA kernels (GPU time)", "Memory copies and sets", "CUDA API calls", "NVTX ranges",
                  "CUDA kernels in NVTX range matmul/naive", "GPU idle"):
        assert table in out, table
    assert "naive_matmul" in out and "[CUDA memcpy Host-to-Device]" in out and "cudaLaunchKernel" in out
    assert "CUPTI 13 activity API" in out and "in place of nsys (the nsys found cannot make a report here)" in out
    assert (tmp_path / "o" / "command-nvtx_matmul.log").read_text().startswith("n=1024")


def test_nsys_json_names_the_cupti_source_and_keeps_the_kernels_of_each_range(stock, program, tmp_path):
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--json", "-", "--", str(program))
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["source"] == "cupti" and document["fallback_why"] == "the nsys found cannot make a report here"
    (summary,) = document["summaries"]
    ranges = {g["range"]: [k["name"].split("(")[0] for k in g["kernels"]] for g in summary["kernels_by_range"]}
    assert ranges == {"matmul/naive": ["naive_matmul"], "matmul/tiled": ["tiled_matmul"]}
    assert summary["idle"]["host_calls_known"] and summary["error"] is None


def test_a_previous_runs_records_are_not_this_runs(stock, program, tmp_path):
    folder = tmp_path / "o" / "command-nvtx_matmul.cupti"
    folder.mkdir(parents=True)
    shutil.copyfile(RECORDED, folder / "activity-1.jsonl")  # an earlier run's process
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--json", "-", "--", str(program))
    assert result.exit_code == 0, result.output
    kernels = {k["name"].split("(")[0]: k["instances"] for k in json.loads(result.stdout)["summaries"][0]["kernels"]}
    assert kernels == {"naive_matmul": 3, "tiled_matmul": 3}


@pytest.mark.parametrize("verb", ["nsys", "profile"])
def test_a_link_as_the_records_folder_is_refused_and_its_files_are_kept(stock, program, tmp_path, verb):
    """A link where gpuprof keeps the CUPTI records (command-<program>.cupti) is refused before the
    program runs: a previous run's activity-*.jsonl are deleted from that folder, so through a link a
    user's file of that name went (seen by hand before files.own_folder)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "activity-1.jsonl").write_text("a user's file\n")
    records = tmp_path / "o" / ("timeline" if verb == "profile" else "") / "command-nvtx_matmul.cupti"
    records.parent.mkdir(parents=True)
    records.symlink_to(victim)
    result = invoke(verb, "--out", str(tmp_path / "o"), "--", str(program))
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "symbolic link" in errors[0] and "never writes into or empties" in errors[0]
    assert (victim / "activity-1.jsonl").read_text() == "a user's file\n"
    assert "program" not in stock.verbs()


def test_a_program_that_died_keeps_its_records_with_a_note_and_exits_1(stock, program, tmp_path):
    stock.leaves, stock.returncode = "partial", 134
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--", str(program))
    assert result.exit_code == 1, result.output
    out = " ".join(result.output.split())
    assert "exited with code 134" in out and "did not exit normally" in out and "naive_matmul" in out


def test_a_program_that_never_starts_cuda_is_reported_not_summarised(stock, program, tmp_path):
    stock.leaves = None
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--", str(program))
    assert result.exit_code == 1, result.output
    assert "without starting CUDA" in " ".join(result.output.split())


def test_without_nsys_the_note_says_cupti_stood_in(stock, program, tmp_path, monkeypatch):
    def missing(explicit=None):
        raise EnvironmentProblem("nsys (Nsight Systems) was not found")

    monkeypatch.setattr(nsys_core.tools, "find_nsys", missing)
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--json", "-", "--", str(program))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["fallback_why"] == "nsys is missing" and stock.verbs() == ["program"]
    assert "nsys was not found" in result.stderr and "CUPTI's activity API" in result.stderr


def test_where_the_library_cannot_be_built_a_cpp_program_gets_both_reasons(program, tmp_path, monkeypatch):
    monkeypatch.setattr(nsys_core.tools, "find_nsys", lambda explicit=None: FOUND_NSYS)
    monkeypatch.setattr(_proc, "run", StockMachine(program))
    monkeypatch.setattr(nsys_cupti, "prepare", lambda: (_ for _ in ()).throw(
        EnvironmentProblem("CUPTI was not found (cupti.h with a libcupti.so of the same version)")))
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--", str(program))
    assert result.exit_code == 3, result.output
    said = " ".join(result.output.split())
    assert "CUPTI was not found" in said and "runs only Python programs" in said


def test_profile_shows_the_cupti_timeline_per_range_before_ncu(stock, program, tmp_path, monkeypatch):
    def no_ncu(*args, **kwargs):
        raise EnvironmentProblem("ncu is not on PATH")

    monkeypatch.setattr(ncu_core, "profile_command", no_ncu)
    result = invoke("profile", "--out", str(tmp_path / "o"), "--", str(program))
    assert result.exit_code == 3, result.output  # the timeline is shown; ncu's absence is the exit code
    out = " ".join(result.output.split())
    assert "timeline source: CUPTI 13 activity API" in out and "CUDA kernels in NVTX range matmul/tiled" in out
    assert "yours: naive_matmul, tiled_matmul" in out and "ncu is not on PATH" in out


def test_a_program_that_hangs_is_reported_with_what_was_recorded_before(stock, program, tmp_path, monkeypatch):
    def hang(argv, *, timeout_s, cwd=None, env=None, isolated=False):
        if argv[0] == FOUND_NSYS:
            return stock(argv, timeout_s=timeout_s, env=env)
        lines = RECORDED.read_text().splitlines(keepends=True)
        (Path(env[cupti_tool.OUT_ENV]) / "activity-2322.jsonl.partial").write_text("".join(lines[:-1]))
        raise EnvironmentProblem(f"nvtx_matmul did not finish within {timeout_s:.0f} s")

    monkeypatch.setattr(_proc, "run", hang)
    result = invoke("nsys", "--out", str(tmp_path / "o"), "--timeout", "5", "--json", "-", "--", str(program))
    assert result.exit_code == 1, result.output
    (summary,) = json.loads(result.stdout)["summaries"]
    assert summary["error"] == "nvtx_matmul did not finish within 5 s" and len(summary["kernels"]) == 2


# ---------------------------------------------------------------- a family, where nsys cannot make a report


class FamilyChildren:
    """No nsys; each `gpuprof launch` child, run with the injection library, leaves the recorded
    activity file, or (no_gpu) stops as gpuprof does on a machine without a driver: exit 3, one line."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.no_gpu = False

    def __call__(self, argv, *, timeout_s, cwd=None, env=None, isolated=False):
        argv = list(argv)
        self.calls.append(argv)
        assert argv[1:4] == ["-m", "gpuprof", "launch"], argv
        if self.no_gpu:
            return _proc.Completed(argv, EnvironmentProblem.exit_code, "", "error: no NVIDIA driver found here\n")
        shutil.copyfile(RECORDED, Path(env[cupti_tool.OUT_ENV]) / "activity-7.jsonl")
        return _proc.Completed(argv, 0, "", "")


@pytest.fixture
def children(monkeypatch) -> FamilyChildren:
    fake = FamilyChildren()

    def no_nsys(explicit=None):
        raise EnvironmentProblem("nsys was not found")

    monkeypatch.setattr(nsys_core.tools, "find_nsys", no_nsys)
    monkeypatch.setattr(_proc, "run", fake)
    monkeypatch.setattr(nsys_cupti, "prepare", lambda: (INSTALL, LIBRARY))
    return fake


def test_a_family_without_nsys_gets_each_variants_child_through_cupti(children, tmp_path):
    """`gpuprof nsys FAMILY` used the PyTorch profiler where nsys could not report; it now runs the same
    `gpuprof launch` child per variant that nsys would, with the injection library."""
    result = invoke("nsys", "vecadd", "-v", "grid,torch", "--out", str(tmp_path / "o"), "--json", "-")
    assert result.exit_code == 0, result.output
    assert [c[5] for c in children.calls] == ["grid", "torch"]
    document = json.loads(result.stdout)
    assert document["source"] == "cupti" and document["fallback_why"] == "nsys is missing"
    assert [s["label"] for s in document["summaries"]] == ["grid", "torch"]
    assert all(s["kernels"] and s["error"] is None for s in document["summaries"])
    assert (tmp_path / "o" / "vecadd-grid.cupti").is_dir() and (tmp_path / "o" / "vecadd-torch.log").is_file()


def test_a_family_child_that_finds_no_gpu_is_one_line_not_a_row_per_variant(children, tmp_path):
    children.no_gpu = True
    result = invoke("nsys", "vecadd", "--out", str(tmp_path / "o"))
    assert result.exit_code == 3, result.output
    assert result.stderr.strip().splitlines()[-1] == "error: no NVIDIA driver found here"
    assert len(children.calls) == 1


def test_a_link_as_a_variants_records_folder_is_refused_before_its_child_runs(children, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "activity-1.jsonl").write_text("a user's file\n")
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "vecadd-grid.cupti").symlink_to(victim)
    result = invoke("nsys", "vecadd", "-v", "grid", "--out", str(tmp_path / "o"))
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.stderr and children.calls == []
    assert (victim / "activity-1.jsonl").read_text() == "a user's file\n"
