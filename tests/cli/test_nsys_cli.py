"""`gpuprof nsys` through CliRunner, with `_proc.run` replaying recorded nsys output (no GPU, no nsys)."""

from __future__ import annotations

import json
import sys

import pytest
from rich.console import Console
from typer.testing import CliRunner

import gpuprof.cli.nsys  # noqa: F401  (registers the command on app)
from gpuprof.cli._app import app
from gpuprof.commands import nsys_torch_fallback
from gpuprof.errors import EnvironmentProblem
from gpuprof.parsers import nsys_stats as ns
from gpuprof.render import nsys_view
from gpuprof.tools import _proc
from gpuprof.tools import nsys as tools
from gpuprof.tools.target import LaunchTarget
from tests.nsys_fakes import (
    EIGHT_REPORTS,
    PROFILE_IMPORTER_FAILED,
    SQLITE,
    FakeNsys,
    fake_nsys,  # noqa: F401  (the `fake` fixture)
)

runner = CliRunner()


@pytest.fixture
def nsys_bin(tmp_path) -> str:
    path = tmp_path / "bin" / "nsys"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def no_nsys(monkeypatch, tmp_path):
    """Nothing to find: no nsys or ncu on PATH, in $CUDA_HOME or under /opt/nvidia."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("CUDA_HOME", str(empty))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(tools, "OPT_NVIDIA", empty)
    monkeypatch.setattr(_proc, "run", lambda *a, **k: pytest.fail("no tool may run"))


def invoke(*args: str):
    result = runner.invoke(app, ["nsys", *args], env={"COLUMNS": "200"})
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_help_shows_the_forms_and_examples():
    result = invoke("--help")
    assert result.exit_code == 0
    out = " ".join(result.stdout.split())
    assert "[FAMILY] [-- COMMAND [ARGS]...]" in out
    for text in ("gpuprof nsys matmul --variants", "gpuprof nsys -- python", "--import", "--nsys", "--lib-path",
                 "PyTorch profiler", "--out"):
        assert text in out


def test_family_kernel_summary_parsed_and_shown(fake, nsys_bin, tmp_path):
    f = fake()
    out_dir = tmp_path / "runs"
    result = invoke("vecadd", "--variants", "grid", "--size", "2^20", "--nsys", nsys_bin, "--out", str(out_dir))
    assert result.exit_code == 0, result.output
    (profile,), (stats,) = f.argvs("profile"), f.argvs("stats")
    child = LaunchTarget("vecadd", "grid", {"n": 1 << 20}, count=3).argv()
    assert profile[:7] == [nsys_bin, "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
                           f"--output={out_dir / 'vecadd-grid'}", "--force-overwrite=true"]
    assert profile[7:] == child
    assert stats[:3] == [nsys_bin, "stats", "--force-export=true"]
    assert stats[-1] == str(out_dir / "vecadd-grid.nsys-rep")
    out = result.stdout
    assert "vecadd/grid" in out and "n=1048576" in out
    for title in ("CUDA kernels (GPU time)", "Memory copies and sets", "CUDA API calls", "NVTX ranges"):
        assert title in out
    assert "fma_fp32 " in out and "78.977" in out  # first kernel row of the recorded CSV, its name as a stem
    assert "fma_fp32(float *, int, int)" not in out  # the full name: --wide and --json
    assert "cudaLaunchKernel" in out and "[CUDA memcpy Host-to-Device]" in out and "dom_range [mydomain]" in out
    assert str(out_dir / "vecadd-grid.nsys-rep") in out
    assert result.stderr.strip() == ""


def test_importer_failure_is_one_line_exit_3(fake, nsys_bin, tmp_path):
    fake(profile=PROFILE_IMPORTER_FAILED)
    result = invoke("vecadd", "--variants", "grid", "--nsys", nsys_bin, "--out", str(tmp_path / "o"))
    assert result.exit_code == 3
    (line,) = error_lines(result)
    assert "libdw.so.1" in line and "libelf.so.1" in line and "LD_LIBRARY_PATH" in line
    assert "(nsys said: Importer error status: An unknown error occurred.)" in line  # not eaten as markup
    assert "no kernels" not in result.output.lower() and result.stdout.strip() == ""


def test_lib_path_reaches_nsys_through_ld_library_path(fake, nsys_bin, tmp_path, monkeypatch):
    monkeypatch.delenv(tools.LIBS_ENV, raising=False)
    f = fake()
    libs = tmp_path / "elfutils"
    libs.mkdir()
    result = invoke("vecadd", "-v", "grid", "--nsys", nsys_bin, "--lib-path", str(libs), "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    assert all(env["LD_LIBRARY_PATH"].split(":")[0] == str(libs) for _, _, env in f.calls)


def test_missing_nsys_falls_back_to_the_pytorch_profiler_saying_so_once(no_nsys, tmp_path, monkeypatch):
    def record(run, trace, ranges):  # what torch.profiler would write (Kineto's Chrome trace shape)
        events = [{"ph": "X", "cat": "kernel", "name": f"vecadd_{ranges[-1]}", "ts": 10.0 * i, "dur": 10.5}
                  for i in range(3)]
        events += [{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "ts": 1.0, "dur": 4.25},
                   {"ph": "X", "cat": "user_annotation", "name": ranges[-1], "ts": 0.0, "dur": 50.0}]
        trace.write_text(json.dumps({"traceEvents": events}))
        return trace

    monkeypatch.setattr(nsys_torch_fallback, "_torch_version", lambda missing: "2.9.0+cu130")
    monkeypatch.setattr(nsys_torch_fallback, "record_torch_trace", record)
    result = invoke("vecadd", "--variants", "grid,vectorized", "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    assert result.output.count("nsys was not found") == 1
    assert "PyTorch profiler (CUPTI)" in result.stderr
    out = " ".join(result.stdout.split())
    assert "vecadd_grid" in out and "vecadd_vectorized" in out and "cuLaunchKernel" in out
    assert "31.500" in out  # 3 x 10.5 µs, in the kernel table's µs column
    for v in ("grid", "vectorized"):
        assert f"Chrome trace (open it in https://ui.perfetto.dev): {tmp_path / 'o' / f'vecadd-{v}.trace.json'}" in out
    assert "record_function" in out and "torch.profiler 2.9.0+cu130" in out


def test_missing_nsys_with_a_command_is_exit_3_one_line(no_nsys, tmp_path):
    result = invoke("--out", str(tmp_path), "--", sys.executable, "-c", "pass")
    assert result.exit_code == 3
    (line,) = error_lines(result)
    assert "not found" in line and "runs only Python programs" in line


def test_command_after_dashes_keeps_its_own_options(fake, nsys_bin, tmp_path):
    f = fake()
    command = [sys.executable, "-c", "pass", "--size", "9", "--variants", "x"]
    result = invoke("--nsys", nsys_bin, "--out", str(tmp_path / "o"), "--", *command)
    assert result.exit_code == 0, result.output
    (profile,) = f.argvs("profile")
    assert profile[-len(command):] == command


def test_unknown_family_is_exit_2_even_without_nsys(no_nsys, tmp_path):
    result = invoke("no_such_family", "--out", str(tmp_path))
    assert result.exit_code == 2
    (line,) = error_lines(result)
    assert "unknown family 'no_such_family'" in line and "vecadd" in line


def test_unknown_variant_is_exit_2(no_nsys, tmp_path):
    result = invoke("vecadd", "--variants", "grid,nope", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "unknown variant 'nope'" in error_lines(result)[0]


@pytest.mark.parametrize("args, why", [
    ((), "give one of FAMILY, -- COMMAND or --import"),
    (("vecadd", "--import", str(SQLITE)), "give one of"),
    (("./app", "--flag"), "put it after --"),
    (("--variants", "grid", "--", "ls"), "goes with a FAMILY"),
])
def test_usage_errors_are_exit_2_one_line(no_nsys, tmp_path, args, why):
    result = invoke(*args, "--out", str(tmp_path))
    assert result.exit_code == 2
    (line,) = error_lines(result)
    assert why in line


def test_import_sqlite_without_nsys_uses_the_sqlite_readers(no_nsys, tmp_path):
    result = invoke("--import", str(SQLITE), "--out", str(tmp_path / "o"), "--json", str(tmp_path / "p.json"))
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "nsys_2025.3.2_export_small.sqlite" in out
    for name in ("fma_fp32", "scale<double>", "scale<float>"):  # stems; the two scale<> told apart by their argument
        assert f" {name} " in out
    wide = " ".join(invoke("--import", str(SQLITE), "--out", str(tmp_path / "o"), "--wide").stdout.split())
    for name in ("fma_fp32(float *, int, int)", "void scale<double, (int)3>(T1 *, T1, int)"):
        assert name in wide
    assert "NVTX ranges" in out and "dom_range [mydomain]" in out and "se_range" in out
    assert "need nsys" in out and "CUDA API calls" not in out  # not in an export read directly
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["source"] == "sqlite" and len(data["summaries"][0]["kernels"]) == 7


def test_import_nsys_rep_without_nsys_is_exit_3(no_nsys, tmp_path):
    report = tmp_path / "r.nsys-rep"
    report.write_bytes(b"x")
    result = invoke("--import", str(report), "--out", str(tmp_path / "o"))
    assert result.exit_code == 3
    assert "not found" in error_lines(result)[0]


def test_json_into_a_missing_directory_is_refused_before_profiling(no_nsys, tmp_path):
    result = invoke("vecadd", "--out", str(tmp_path / "o"), "--json", str(tmp_path / "no" / "p.json"))
    assert result.exit_code == 2 and "does not exist" in error_lines(result)[0]


def test_json_out(fake, nsys_bin, tmp_path):
    fake()
    result = invoke("vecadd", "-v", "grid,vectorized", "--nsys", nsys_bin, "--out", str(tmp_path / "o"),
                    "--json", str(tmp_path / "nsys.json"))
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "nsys.json").read_text())
    assert [s["label"] for s in data["summaries"]] == ["grid", "vectorized"]
    assert f"summaries written to {tmp_path / 'nsys.json'}" in " ".join(result.stdout.split())


def test_a_failed_variant_is_shown_and_exits_1(monkeypatch, nsys_bin, tmp_path):
    f = FakeNsys()

    def run(argv, **kw):
        if argv[1] == "profile" and "vectorized" in " ".join(argv):
            raise EnvironmentProblem("nsys did not finish within 600 s")
        return f(argv, **kw)

    monkeypatch.setattr(_proc, "run", run)
    result = invoke("vecadd", "-v", "vectorized,grid", "--nsys", nsys_bin, "--out", str(tmp_path / "o"))
    assert result.exit_code == 1
    assert "FAILED: nsys did not finish within 600 s" in " ".join(result.stdout.split())
    assert "fma_fp32" in result.stdout  # grid still ran
    (line,) = error_lines(result)
    assert "1 could not be profiled" in line and "vectorized" in line


# --- rendering ---------------------------------------------------------------------------------------


def test_one_time_unit_per_column():
    api = ns.parse_stats(EIGHT_REPORTS).report("cuda_api_sum").records
    console = Console(record=True, width=200)
    console.print(nsys_view.api_table(api))
    text = console.export_text()
    header = next(line for line in text.splitlines() if "Function" in line)
    assert "Total (µs)" in header and "Min (ns)" in header  # the smallest min is 71 ns
    malloc = next(line for line in text.splitlines() if "cudaMalloc" in line)
    assert "145,725.298" in malloc  # 145725298 ns in µs, 3 decimals: nothing lost
    assert nsys_view.time_unit([78977.0, 16288.0]) == ("µs", 1e3)
    assert nsys_view.time_unit([2.5e9, 1.5e8]) == ("s", 1e9)
    assert nsys_view.time_unit([None, 0.0]) == ("ns", 1.0)


def test_define_and_add_reach_each_child(fake, nsys_bin, tmp_path):
    """-D goes to every child; --add (with its --block) only to the child launching the user's variant."""
    f = fake()
    mine = tmp_path / "mine.cu"
    mine.write_text('extern "C" __global__ void mine(const float* __restrict__ a, const float* __restrict__ b, '
                    "float* __restrict__ c, int n) {}\n")
    result = invoke("matmul", "-v", "blocktile_2d", "-D", "BM=64", "--nsys", nsys_bin, "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    (profile,) = f.argvs("profile")
    assert profile[profile.index("launch"):][:2] == ["launch", "matmul"]
    assert profile[profile.index("--define") + 1] == "BM=64"

    f = fake()
    result = invoke("vecadd", "-v", "grid", "--add", str(mine), "--block", "128", "--nsys", nsys_bin,
                    "--out", str(tmp_path / "o2"))
    assert result.exit_code == 0, result.output
    grid, user = f.argvs("profile")
    assert "--add" not in grid
    assert user[user.index("launch") + 2] == "mine"
    assert user[user.index("--add") + 1] == str(mine.resolve()) and user[user.index("--block") + 1] == "128"
    assert "vecadd/mine" in result.stdout


def test_pytorch_fallback_launches_the_users_variant_with_the_defines(no_nsys, tmp_path, monkeypatch):
    from gpuprof.commands import launch

    launched = []
    monkeypatch.setattr(nsys_torch_fallback, "_torch_version", lambda missing: "2.9.0+cu130")
    monkeypatch.setattr(launch, "launch_variant", lambda *a, **k: launched.append((a, k)))

    def record(run, trace, ranges):
        run()
        trace.write_text(json.dumps({"traceEvents": []}))
        return trace

    monkeypatch.setattr(nsys_torch_fallback, "record_torch_trace", record)
    result = invoke("matmul", "-v", "blocktile_2d", "-D", "BM=64", "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    ((args, kwargs),) = launched
    assert args[:2] == ("matmul", "blocktile_2d") and kwargs["defines"] == {"BM": 64}


def test_import_of_an_unrelated_sqlite_file_is_refused_before_nsys_runs(fake, nsys_bin, tmp_path):
    import sqlite3
    from contextlib import closing

    f = fake()
    other = tmp_path / "app.sqlite"
    with closing(sqlite3.connect(other)) as db:
        db.execute("CREATE TABLE users (id INTEGER)")
        db.commit()
    result = invoke("--import", str(other), "--nsys", nsys_bin)
    assert result.exit_code == 2
    (line,) = error_lines(result)
    assert "not an Nsight Systems export: it has none of the tables" in line and "nsys export --type sqlite" in line
    assert f.calls == []
