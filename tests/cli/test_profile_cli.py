"""`gpuprof ncu` and `gpuprof sanitize` without a GPU: the argv they build, the recorded outputs
they parse (the tools are replaced by a patched _proc.run), and the errors they give."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.tools import _proc

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "tools"
KERNELS = Path(__file__).resolve().parent.parent / "kernels"


class FakeTool:
    """Stands in for ncu / compute-sanitizer: records every argv, answers with recorded text."""

    def __init__(self, stdout: str = "", returncode: int = 0, write_report: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.stdout, self.returncode, self.write_report = stdout, returncode, write_report

    def __call__(self, argv, *, timeout_s, cwd=None, env=None):
        self.calls.append(list(argv))
        if self.write_report and "--export" in argv:
            Path(argv[argv.index("--export") + 1] + ".ncu-rep").write_bytes(b"not a real report")
        return _proc.Completed(list(argv), self.returncode, self.stdout, "")


@pytest.fixture
def tools(monkeypatch):
    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")

    def install(fake: FakeTool) -> FakeTool:
        monkeypatch.setattr(_proc, "run", fake)
        return fake

    return install


def one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    return lines[0]


def test_ncu_failed_batch_profiles_each_variant_alone_with_clocks_untouched(tools, tmp_path):
    fake = tools(FakeTool(stdout="==PROF== Disconnected\n"))
    result = CliRunner().invoke(app, ["ncu", "matmul", "-v", "naive,cublas", "-s", "256", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output  # no report for any variant: each says why, then exit 1 (as nsys)
    batch, *profiles = [argv for argv in fake.calls if "--export" in argv]
    # Both variants in one child first; that run wrote no report, so each runs alone to say why.
    assert [batch[i + 1] for i, a in enumerate(batch) if a == "--nvtx-include"] == ["matmul/naive/", "matmul/cublas/"]
    assert batch[batch.index("gpuprof") + 1:][:3] == ["launch", "matmul", "naive,cublas"]
    assert len(profiles) == 2
    for argv, variant in zip(profiles, ["naive", "cublas"]):
        assert argv[argv.index("--clock-control") + 1] == "none"
        assert "--nvtx" in argv and argv[argv.index("--nvtx-include") + 1] == f"matmul/{variant}/"
        child = argv[argv.index("gpuprof") - 2:]
        assert child[3:6] == ["launch", "matmul", variant]
        assert "--warmup" in child  # warm-ups run outside the NVTX ranges, so ncu skips them
    assert result.output.count("ncu wrote no report") == 2
    assert "ncu could not profile 2 of 2" in one_error_line(result.output)


def test_ncu_counter_permission_error_is_one_line_exit_3(tools, tmp_path):
    text = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
            "Performance Counters on the target device 0\n")
    tools(FakeTool(stdout=text, returncode=1))
    result = CliRunner().invoke(app, ["ncu", "vecadd", "-v", "grid", "--out", str(tmp_path)])
    assert result.exit_code == 3
    assert "NVreg_RestrictProfilingToAdminUsers=0" in one_error_line(result.output)


def test_ncu_clock_control_choice_is_checked(tools, tmp_path):
    tools(FakeTool())
    result = CliRunner().invoke(app, ["ncu", "vecadd", "--clock-control", "boost", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "none, base" in one_error_line(result.output)


def test_ncu_add_passes_the_users_kernel_to_the_child(tools, tmp_path):
    fake = tools(FakeTool())
    kernel = KERNELS / "oob_write.cu"
    result = CliRunner().invoke(app, ["ncu", "vecadd", "--add", str(kernel), "-v", "oob_write", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output  # the fake writes no report: a variant not profiled
    (argv,) = [a for a in fake.calls if "--export" in a]
    assert argv[argv.index("--nvtx-include") + 1] == "vecadd/oob_write/"
    assert str(kernel.resolve()) in argv[argv.index("--add") + 1]


@pytest.mark.parametrize("fixture, code, words", [
    ("sanitizer_2025.3.1_memcheck_oob_write_lineinfo.txt", 1, "invalid write of 4 bytes"),
    ("sanitizer_2025.3.1_memcheck_clean.txt", 0, "clean"),
])
def test_sanitize_reports_findings_and_exits_by_them(tools, tmp_path, monkeypatch, fixture, code, words):
    from gpuprof.commands import sanitize_times

    monkeypatch.setattr(sanitize_times, "CACHE_DIR", tmp_path / "cache")
    fake = tools(FakeTool(stdout=(FIXTURES / fixture).read_text(), returncode=86 if code else 0))
    out = tmp_path / "out.json"
    result = CliRunner().invoke(app, ["sanitize", "vecadd", "-v", "grid", "--tool", "memcheck", "--out", str(tmp_path),
                                      "--json", str(out)])
    assert result.exit_code == code, result.output
    assert words in result.output
    # the closing line explains the run's time; the JSON keeps it, and the child's time is recorded
    assert re.search(r"wall \d+\.\d s; longest child: vecadd/grid memcheck \d+\.\d s", result.output)
    document = json.loads(out.read_text())
    assert document["wall_seconds"] >= 0 and document["longest_child"]["child"] == "vecadd/grid memcheck"
    assert document["runs"][0]["seconds"] is not None
    assert len(sanitize_times.load(tmp_path / "cache" / sanitize_times.FILE_NAME)) == 1
    (argv,) = fake.calls
    assert argv[:3] == ["/opt/fake/compute-sanitizer", "--tool", "memcheck"]
    assert "--error-exitcode" in argv and "--plain-alloc" in argv  # pools would hide the bug
    assert argv[argv.index("--size") + 1] == "n=4097"  # the middle check size: racecheck is slow


def test_sanitize_unknown_tool_lists_the_choices(tools):
    tools(FakeTool())
    result = CliRunner().invoke(app, ["sanitize", "vecadd", "--tool", "memcheck,leakcheck"])
    assert result.exit_code == 2
    assert "memcheck, racecheck, initcheck, synccheck" in one_error_line(result.output)


def test_add_with_the_wrong_signature_names_file_and_line(tmp_path):
    mine = tmp_path / "mine.cu"
    mine.write_text('// mine\n\nextern "C" __global__ void mine(const float* a, float* c, int n) {}\n')
    result = CliRunner().invoke(app, ["run", "vecadd", "--add", str(mine)])
    assert result.exit_code == 2
    line = one_error_line(result.output)
    assert f"{mine}:3" in line and "const float*, const float*, float*, int" in line


def test_add_without_a_file_and_geometry_without_add_are_usage_errors(tmp_path):
    missing = CliRunner().invoke(app, ["run", "vecadd", "--add", str(tmp_path / "nope.cu")])
    assert missing.exit_code == 2 and "cannot read" in one_error_line(missing.output)
    stray = CliRunner().invoke(app, ["run", "vecadd", "--block", "128"])
    assert stray.exit_code == 2 and "go with --add" in one_error_line(stray.output)
