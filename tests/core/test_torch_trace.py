"""The nsys fallback on PyTorch-profiler traces recorded on the H100 through gpuprof's own
torch_profile_family (tests/fixtures/tools/torch-2.11.0__*.trace.json), and the command fallback."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from gpuprof.commands import nsys as nsys_core
from gpuprof.errors import EnvironmentProblem, ParseError
from gpuprof.parsers import torch_trace
from gpuprof.tools import _proc, torch_child

TOOLS = Path(__file__).resolve().parent.parent / "fixtures" / "tools"
TRACES = sorted(TOOLS.glob("torch-*__*.trace.json"))


def test_every_recorded_trace_is_read():
    assert [p.name for p in TRACES] == ["torch-2.11.0__vecadd-grid.trace.json", "torch-2.11.0__vecadd-torch.trace.json"]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_recorded_trace_gives_the_variants_kernels_inside_its_ranges(path):
    variant = path.name.split("vecadd-")[1].split(".")[0]
    summary = nsys_core.trace_summary(path, variant)
    names = [k.name for k in summary.kernels]
    assert ({"vecadd_grid"} <= set(names) if variant == "grid"
            else any("vectorized_elementwise_kernel" in n for n in names))
    ranges = {r.name: r for r in summary.nvtx}
    assert {"vecadd", variant} <= set(ranges)  # record_function ranges family -> variant, as the NVTX ranges
    # Physics: the variant's range holds its launches, so it lasts at least as long as its kernels' GPU time.
    kernels_ns = sum(k.total_ns for k in summary.kernels)
    assert 0 < kernels_ns <= ranges["vecadd"].total_ns
    assert abs(sum(k.time_pct for k in summary.kernels) - 100.0) < 0.5
    assert summary.api and any(a.name.startswith("cuda") for a in summary.api)  # cuda_runtime / cuda_driver
    for k in summary.kernels:
        assert k.min_ns <= k.med_ns <= k.max_ns and k.instances >= 1


def test_kineto_categories_read_are_the_recorded_ones():
    seen = {e.get("cat") for p in TRACES for e in json.loads(p.read_text())["traceEvents"] if e.get("ph") == "X"}
    assert set(torch_trace.CATEGORIES) - {"gpu_memcpy"} <= seen  # a Kineto rename would show here


@pytest.mark.parametrize("cut", [0, 100, 5000])
def test_truncated_trace_is_a_parse_error(tmp_path, cut):
    bad = tmp_path / "t.trace.json"
    bad.write_bytes(TRACES[0].read_bytes()[:cut])
    with pytest.raises(ParseError) as err:
        torch_trace.read_trace(bad)
    assert err.value.exit_code == 2 and str(bad) in err.value.message


def test_python_command_falls_back_to_the_child_under_the_pytorch_profiler(monkeypatch, tmp_path):
    calls = []

    def child(argv, *, timeout_s, cwd=None, env=None):  # the child as it ran on the H100: it wrote this trace
        calls.append((argv, env))
        shutil.copyfile(TOOLS / "torch-2.11.0__vecadd-torch.trace.json", argv[3])
        return _proc.Completed(argv, 0, "", "")

    monkeypatch.setattr(_proc, "run", child)
    out = nsys_core.torch_profile_command(["python3", "mlp.py", "--layers", "10"], tmp_path)
    (argv, env), = calls
    assert argv[:3] == ["python3", "-m", "gpuprof.tools.torch_child"] and argv[4:] == ["--", "mlp.py", "--layers", "10"]
    assert str(Path(nsys_core.__file__).resolve().parents[2]) in env["PYTHONPATH"]
    (summary,) = out.summaries
    assert out.source == "torch" and not summary.error
    assert summary.kernels[0].total_ns >= summary.kernels[-1].total_ns  # largest total first


def test_non_python_command_still_needs_nsys(tmp_path):
    with pytest.raises(EnvironmentProblem, match="runs only Python programs"):
        nsys_core.torch_profile_command(["./app"], tmp_path)


def test_child_runs_a_script_and_keeps_its_exit_code(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "prog.py"
    script.write_text("import sys\nprint('ran', sys.argv[1:])\nsys.exit(3)\n")
    trace = tmp_path / "t.trace.json"
    done = _proc.run(torch_child.child_argv([sys.executable, str(script), "a"], trace), timeout_s=300,
                     env=torch_child.child_env())
    assert done.returncode == 3 and "ran ['a']" in done.stdout and trace.is_file()
