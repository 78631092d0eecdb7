"""Commands that behave alike: --json FILE|-, -D and --add declared once, --add joining the selection,
nothing silently ignored, truthful Ctrl-C, and inputs never overwritten."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.cli._boundary import exit_on_error
from gpuprof.errors import Interrupted, UsageError
from gpuprof.variants import catalog
from gpuprof.variants.selection import VariantOptions

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "tests" / "fixtures" / "results" / "smoke_a.json"
KERNEL = ('extern "C" __global__ void {name}(const float* __restrict__ a, const float* __restrict__ b, '
          'float* __restrict__ c, int n) {{}}\n')
runner = CliRunner()

SHARED = ("--define", "--add", "--block", "--tile", "--grid", "--kernels-dir")


@pytest.mark.parametrize("command", ["run", "build", "ncu", "nsys", "sanitize", "launch"])
def test_variant_options_are_on_every_command_that_compiles_or_launches(command):
    from typer.main import get_command

    from gpuprof.cli._app import app as typer_app

    params = {opt for p in get_command(typer_app).commands[command].params for opt in p.opts}
    assert set(SHARED) <= params


@pytest.mark.parametrize("command", ["list", "build", "devicequery", "doctor", "compare", "run", "suite", "nsys",
                                     "ncu", "sanitize", "merge"])
def test_json_file_or_stdout_on_every_command_with_results(command):
    from typer.main import get_command

    (option,) = [p for p in get_command(app).commands[command].params if "--json" in p.opts]
    assert not option.is_flag and option.metavar == "FILE|-"


def _two_kernels(tmp_path: Path) -> list[str]:
    paths = []
    for name in ("mine_a", "mine_b"):
        path = tmp_path / f"{name}.cu"
        path.write_text(KERNEL.format(name=name))
        paths.append(str(path))
    return paths


def test_several_add_accumulate_and_join_the_selection(tmp_path):
    options = VariantOptions(add=_two_kernels(tmp_path))
    [(_, chosen, extra)] = options.select([catalog.load_family("vecadd")], "grid")
    assert [v.name for v in chosen] == ["grid", "mine_a", "mine_b"]
    assert [v.name for v in extra] == ["mine_a", "mine_b"]
    args = options.cli_args()
    assert args.count("--add") == 2


def test_the_same_add_twice_is_an_error(tmp_path):
    path = _two_kernels(tmp_path)[0]
    with pytest.raises(UsageError, match="already exists in --add"):
        VariantOptions(add=[path, path]).select([catalog.load_family("vecadd")], None)


def test_define_names_are_checked_case_sensitively():
    matmul = catalog.load_family("matmul")
    with pytest.raises(UsageError, match=r"-D bm: .*did you mean BM\? \(-D names are case-sensitive\)"):
        VariantOptions(define=["bm=64"]).select([matmul], "blocktile_2d")
    with pytest.raises(UsageError, match="no selected variant defines it.*they have no tile parameters"):
        VariantOptions(define=["BM=64"]).select([matmul], "naive,cublas")
    [(_, chosen, _)] = VariantOptions(define=["BM=64"]).select([matmul], "blocktile_2d")
    assert chosen[0].defines["BM"] == 64


def test_kernels_dir_without_a_manifest_for_the_family_is_an_error(tmp_path):
    (tmp_path / "matmul.toml").write_text("")
    with pytest.raises(UsageError, match="has no vecadd.toml"):
        VariantOptions(kernels_dir=tmp_path).select([catalog.load_family("vecadd")], None)


def test_ctrl_c_says_what_was_saved(tmp_path):
    with pytest.raises(Interrupted, match="nothing was saved"), exit_on_error():
        raise KeyboardInterrupt
    saved = tmp_path / "r.json"
    with pytest.raises(Interrupted, match=f"saved to {saved}"), exit_on_error(lambda: saved):
        raise KeyboardInterrupt


def test_json_dash_prints_only_json_on_stdout():
    listing = json.loads(runner.invoke(app, ["list", "vecadd", "--json", "-"]).stdout)
    assert listing["schema"] == "gpuprof.list"


def test_compare_json_file_and_format_alias_agree(tmp_path):
    base, new = tmp_path / "a.json", tmp_path / "b.json"
    shutil.copy(RESULTS, base)
    shutil.copy(RESULTS, new)
    out = tmp_path / "report.json"
    written = runner.invoke(app, ["compare", str(base), str(new), "--json", str(out)])
    assert written.exit_code == 0, written.output
    alias = runner.invoke(app, ["compare", str(base), str(new), "--format", "json"])
    dash = runner.invoke(app, ["compare", str(base), str(new), "--json", "-"])
    assert json.loads(out.read_text()) == json.loads(alias.stdout) == json.loads(dash.stdout)
    again = runner.invoke(app, ["compare", str(base), str(new), "--json", str(out)])  # ours: replaced
    assert again.exit_code == 0


def test_force_replaces_a_file_gpuprof_did_not_write(tmp_path):
    base = tmp_path / "a.json"
    shutil.copy(RESULTS, base)
    notes = tmp_path / "notes.md"
    notes.write_text("mine\n")
    refused = runner.invoke(app, ["compare", str(base), str(base), "--markdown", str(notes)])
    assert refused.exit_code == 2 and notes.read_text() == "mine\n"
    forced = runner.invoke(app, ["compare", str(base), str(base), "--markdown", str(notes), "--force"])
    assert forced.exit_code == 0 and notes.read_text().startswith("## gpuprof compare")


def test_nsys_import_writes_nothing_unless_asked(tmp_path, monkeypatch):
    from tests.nsys_fakes import SQLITE

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys: the .sqlite is read directly
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    from gpuprof.tools import nsys as tools

    monkeypatch.setattr(tools, "OPT_NVIDIA", tmp_path)
    result = runner.invoke(app, ["nsys", "--import", str(SQLITE)])
    assert result.exit_code in (0, 1), result.output
    assert list(tmp_path.iterdir()) == []


def test_ncu_plot_without_roofline_data_warns(monkeypatch, tmp_path):
    from gpuprof.commands import ncu as core

    run = core.NcuRun(family=None, clock_control="none", results=[], reader="test")
    monkeypatch.setattr(core, "import_report", lambda path, ncu=None: run)
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"x")
    result = runner.invoke(app, ["ncu", "--import", str(report), "--plot", str(tmp_path / "r.png")])
    assert "warning: --plot" in result.stderr and "nothing written" in result.stderr
    assert not (tmp_path / "r.png").exists()


def test_no_cli_module_writes_an_exit_code_as_a_number():
    """Exit codes come from the error classes, through cli/_boundary.py only."""
    import ast

    for path in sorted((REPO / "gpuprof" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name.endswith(("Exit", "exit", "fail")):
                    literal = [a for a in [*node.args, *(k.value for k in node.keywords)]
                               if isinstance(a, ast.Constant) and isinstance(a.value, int)]
                    assert not literal, f"{path.name}:{node.lineno}: {ast.unparse(node)}"


def test_the_recorded_command_is_rebuilt_from_the_options_not_sys_argv(monkeypatch):
    import gpuprof.cli._output as output
    import gpuprof.cli.run as run_cli

    seen: list[str] = []

    def record(ctx):
        seen.append(output.command_line(ctx))
        raise KeyboardInterrupt  # stop before any GPU work

    monkeypatch.setattr(run_cli, "command_line", record)
    monkeypatch.setattr("sys.argv", ["pytest", "-q"])
    result = runner.invoke(app, ["run", "matmul", "-v", "smem_tiled", "-s", "256", "--check-only", "-D", "TILE=16"])
    assert result.exit_code == Interrupted.exit_code
    assert seen == ["gpuprof run matmul --variants smem_tiled --size 256 --check-only --define TILE=16"]
