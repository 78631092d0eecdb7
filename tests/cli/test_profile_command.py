"""`gpuprof profile -- COMMAND` on CPU: the timeline from the PyTorch-profiler fallback (a trace
recorded on the H100), the top kernels chosen from it, ncu run on only those (a recorded report)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands import ncu as ncu_core
from gpuprof.commands import nsys as nsys_core
from gpuprof.commands import profile as core
from gpuprof.errors import EnvironmentProblem
from gpuprof.parsers.nsys_stats import NsysKernelSummary
from gpuprof.tools import _proc
from tests.ncu_full_reports import requires_ncu_report

TOOLS = Path(__file__).resolve().parent.parent / "fixtures" / "tools"
TRACE = TOOLS / "torch-2.11.0__vecadd-torch.trace.json"
REPORT = TOOLS / "ncu-2025.3.1__launch_vecadd_torch.ncu-rep"
REAL_RUN = _proc.run



class Machine:
    """No nsys; the PyTorch-profiler child and ncu answer with what they wrote on the H100."""

    def __init__(self, ncu_fails: str | None = None) -> None:
        self.ncu_calls: list[list[str]] = []
        self.ncu_fails = ncu_fails

    def __call__(self, argv, *, timeout_s, cwd=None, env=None):
        argv = list(argv)
        if argv[1:3] == ["-m", "gpuprof.tools.torch_child"]:
            shutil.copyfile(TRACE, argv[3])
            return _proc.Completed(argv, 0, "", "")
        if argv[1:3] == ["-m", "gpuprof.parsers.ncu_rep"]:
            return REAL_RUN(argv, timeout_s=timeout_s, cwd=cwd, env=env)
        self.ncu_calls.append(argv)
        if self.ncu_fails:
            return _proc.Completed(argv, 1, "", self.ncu_fails)
        shutil.copyfile(REPORT, argv[argv.index("--export") + 1] + ".ncu-rep")
        return _proc.Completed(argv, 0, "", "==PROF== Disconnected\n")


@pytest.fixture
def machine(monkeypatch):
    def no_nsys(explicit=None):
        raise EnvironmentProblem("nsys (Nsight Systems) was not found")

    monkeypatch.setattr(nsys_core.tools, "find_nsys", no_nsys)
    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")

    def install(m: Machine) -> Machine:
        monkeypatch.setattr(_proc, "run", m)
        return m

    return install


def kernel(name: str, pct: float) -> NsysKernelSummary:
    return NsysKernelSummary(name=name, time_pct=pct, total_ns=pct * 1000, instances=1, avg_ns=pct * 1000,
                             med_ns=pct * 1000, min_ns=pct * 1000, max_ns=pct * 1000, stddev_ns=0.0)


def test_top_kernels_cover_the_share_asked_for_at_most_the_limit():
    ks = (kernel("a", 10), kernel("b", 50), kernel("c", 25), kernel("d", 15))
    assert [k.name for k in core.choose_top(ks, 80, 5)] == ["b", "c", "d"]  # 50+25 < 80, +15 reaches it
    assert [k.name for k in core.choose_top(ks, 50, 5)] == ["b"]
    assert [k.name for k in core.choose_top(ks, 100, 2)] == ["b", "c"]
    assert core.choose_top((), 80, 5) == ()


def test_kernel_regex_matches_bare_function_names():
    regex = core.kernel_regex(["void at::native::vectorized_elementwise_kernel<4, F>(int, F)", "sm90_xmma_gemm_x",
                               "void at::native::vectorized_elementwise_kernel<2, G>(int, G)"])
    assert regex == "^(sm90_xmma_gemm_x|vectorized_elementwise_kernel)$"


@requires_ncu_report
def test_profile_timeline_then_ncu_on_the_top_kernels(machine, tmp_path):
    m = machine(Machine())
    out_json = tmp_path / "p.json"
    result = CliRunner().invoke(app, ["profile", "--out", str(tmp_path / "o"), "--json", str(out_json), "--",
                                      "python3", "vecadd.py", "--n", "4096"])
    assert result.exit_code == 0, result.output
    (argv,) = m.ncu_calls  # one ncu run, filtered to the chosen kernels
    data = json.loads(out_json.read_text())
    timeline = data["timeline"]["summaries"][0]["kernels"]
    top = data["top_kernels"]
    assert top == [k["name"] for k in timeline[: len(top)]]  # the largest first
    shares = [k["time_pct"] for k in timeline]
    assert sum(shares[: len(top) - 1]) < core.COVER_PCT <= sum(shares[: len(top)]) or len(top) == core.MAX_KERNELS
    regex = argv[argv.index("--kernel-name") + 1]
    assert regex.startswith("regex:^(") and "init_curand" in regex
    assert argv[argv.index("--launch-count") + 1] == str(ncu_core.LAUNCHES_PER_KERNEL) == "1"
    assert "per-launch-config" in argv
    assert argv[-4:] == ["python3", "vecadd.py", "--n", "4096"]
    out = " ".join(result.output.split())
    assert "1. Where the GPU time goes" in out and "2. Why" in out
    assert "init_curand" in out and "vectorized_elementwise_kernel" in out and "ncu rule advice" in out
    assert data["ncu_kernels"][0]["name"].startswith("void at::native::vectorized_elementwise_kernel<")


def test_without_ncu_the_timeline_is_shown_and_the_exit_says_why(machine, tmp_path):
    machine(Machine(ncu_fails="==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"))
    result = CliRunner().invoke(app, ["profile", "--out", str(tmp_path), "--", "python3", "vecadd.py"])
    assert result.exit_code == 3
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "ERR_NVGPUCTRPERM" in errors[0]


def test_profile_needs_a_command(tmp_path):
    result = CliRunner().invoke(app, ["profile", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "after --" in result.output
    result = CliRunner().invoke(app, ["profile", "--cover", "0", "--", "python3", "x.py"])
    assert result.exit_code == 2 and "--cover" in result.output


@requires_ncu_report
def test_wide_prints_every_table_at_its_own_width(machine, tmp_path, monkeypatch):
    """--wide at 100 columns: the tables print whole (full kernel names, no header cut to 'lau…'),
    wider than the terminal, as `ncu --wide` does."""
    machine(Machine())
    monkeypatch.setenv("COLUMNS", "100")
    result = CliRunner().invoke(app, ["profile", "--wide", "--out", str(tmp_path / "o"), "--", "python3", "vecadd.py"])
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) > 100
    assert "void at::native::vectorized_elementwise_kernel<" in result.output



def _nvtx_sum():
    from gpuprof.parsers.nsys_stats import load_stats

    return tuple(load_stats(TOOLS / "nsys_2025.3.1_nvtx_sum.csv").report("nvtx_sum").records)


def test_nvtx_names_become_the_expression_ncu_matches():
    """Recorded nvtx_sum (H100): `outer` is push/pop (ncu needs 'outer/'), `se_range` start/end; an
    ncu expression passes unchanged; a name nsys did not see is exit 2 naming those it saw."""
    ranges = _nvtx_sum()
    assert core.nvtx_expressions("outer", ranges, checked=True)[0] == ("outer/",)
    assert core.nvtx_expressions("se_range", ranges, checked=True) == (("se_range",), None)
    assert core.nvtx_expressions("outer/inner/", ranges, checked=True) == (("outer/inner/",), None)
    assert core.nvtx_expressions("regex:out.*", ranges, checked=True) == (("regex:out.*",), None)
    with pytest.raises(core.UsageError, match=r"no NVTX range of that name; it has outer, inner, mydomain@dom_range"):
        core.nvtx_expressions("tiled", ranges, checked=True)
    # the PyTorch profiler sees record_function ranges, not the program's NVTX: both kinds go to ncu
    assert core.nvtx_expressions("tiled", ranges, checked=False)[0] == ("tiled/", "tiled")


@requires_ncu_report
def test_kernel_narrows_the_timeline_and_ncu(machine, tmp_path):
    m = machine(Machine())
    out_json = tmp_path / "p.json"
    result = CliRunner().invoke(app, ["profile", "--kernel", "cupy_(add|fill)", "--out", str(tmp_path / "o"),
                                      "--json", str(out_json), "--", "python3", "vecadd.py"])
    assert result.exit_code == 0, result.output
    (argv,) = m.ncu_calls
    assert argv[argv.index("--kernel-name") + 1] == "regex:^(cupy_add__float64_float64_float64|cupy_fill)$"
    data = json.loads(out_json.read_text())
    assert data["kernel_filter"] == "cupy_(add|fill)" and set(data["top_kernels_origin"].values()) == {"library"}
    assert "matching --kernel 'cupy_(add|fill)'" in " ".join(result.output.split())


@requires_ncu_report
def test_nvtx_hands_the_range_to_ncu(machine, tmp_path):
    m = machine(Machine())
    result = CliRunner().invoke(app, ["profile", "--nvtx", "vecadd", "--out", str(tmp_path / "o"), "--",
                                      "python3", "vecadd.py"])
    assert result.exit_code == 0, result.output
    (argv,) = m.ncu_calls
    assert "--kernel-name" not in argv and argv.count("--nvtx") == 1
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"] == ["vecadd/", "vecadd"]
    assert "inside NVTX range 'vecadd/' or 'vecadd'" in " ".join(result.output.split())


def test_kernel_and_nvtx_mistakes_are_exit_2(machine, tmp_path):
    machine(Machine())
    no_match = CliRunner().invoke(app, ["profile", "--kernel", "softmax", "--out", str(tmp_path / "o"), "--",
                                        "python3", "vecadd.py"])
    assert no_match.exit_code == 2 and "matches none of the timeline's 9 kernels" in no_match.stderr
    assert no_match.stderr.count("\n") == 1
    bad = CliRunner().invoke(app, ["profile", "--kernel", "(", "--out", str(tmp_path / "bad"), "--", "python3", "x.py"])
    assert bad.exit_code == 2 and "not a regular expression" in bad.stderr
    assert not (tmp_path / "bad").exists()  # refused before the program ran
    top = CliRunner().invoke(app, ["profile", "--nvtx", "x", "--top", "2", "--out", str(tmp_path / "top"), "--",
                                   "python3", "vecadd.py"])
    assert top.exit_code == 2 and top.stderr.startswith("error: --top does not apply with --nvtx")
    assert not (tmp_path / "top").exists()
