"""`gpuprof --help`, `-h` and `gpuprof list` start without the heavy libraries (a module check, not a time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("scipy", "cupy", "torch", "pandas", "matplotlib", "triton", "numpy")
PROBE = """
import json, runpy, sys
heavy = json.loads(sys.argv[2])
sys.argv = ["gpuprof", *json.loads(sys.argv[1])]
try:
    runpy.run_module("gpuprof", run_name="__main__")
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["list"], ["list", "matmul"], ["run", "--help"],
                                  ["compare", "--help"], ["merge", "--help"], ["report", "--help"],
                                  ["new-family", "--help"], ["--version"]])
def test_start_imports_no_heavy_library(argv):
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)],
                          capture_output=True, text=True, check=False, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == [], f"gpuprof {' '.join(argv)} imported {loaded}"
    assert done.stdout.strip()


@pytest.mark.parametrize("argv", [["--help"], ["list"], ["list", "matmul", "--json", "-"]])
def test_list_and_help_skip_pydantic_and_the_progress_bar(argv):
    """Typer coerces options through pydantic; gpuprof's str/bool options skip it (cli/_app.py), and
    the progress bar is imported by the commands that draw it."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(["pydantic", "rich"])],
                          capture_output=True, text=True, check=False, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert [m for m in loaded if m.startswith(("pydantic", "rich.progress"))] == [], loaded
    assert done.stdout.strip()


def test_options_that_skip_pydantic_still_refuse_bad_values_and_keep_their_types():
    from typer.testing import CliRunner

    from gpuprof.cli import app

    runner = CliRunner()
    bad = runner.invoke(app, ["nsys", "vecadd", "--count", "lots"])  # an int: Typer's own coercion
    assert bad.exit_code == 2 and "invalid value for '--count'" in bad.stderr
    listing = runner.invoke(app, ["list", "vecadd", "--json", "-"])  # str options passed through
    assert listing.exit_code == 0 and json.loads(listing.stdout)["families"][0]["family"] == "vecadd"


def test_cli_defaults_kept_without_import_match_the_cores():
    from gpuprof.cli import ncu as ncu_cli
    from gpuprof.cli import nsys as nsys_cli
    from gpuprof.cli import profile as profile_cli
    from gpuprof.cli import run as run_cli
    from gpuprof.cli import sanitize as sanitize_cli
    from gpuprof.commands import ncu as ncu_core
    from gpuprof.commands import nsys as nsys_core
    from gpuprof.commands import profile as profile_core
    from gpuprof.commands import run as run_core
    from gpuprof.commands import sanitize as sanitize_core
    from gpuprof.tools.sanitizer import TOOLS

    assert run_cli.DEFAULT_VARIANT_TIMEOUT_S == run_core.DEFAULT_VARIANT_TIMEOUT_S
    assert (nsys_cli.DEFAULT_OUT, nsys_cli.COUNT) == (nsys_core.DEFAULT_OUT, nsys_core.COUNT)
    assert (ncu_cli.DEFAULT_OUT, ncu_cli.LAUNCHES_PER_KERNEL) == (ncu_core.DEFAULT_OUT, ncu_core.LAUNCHES_PER_KERNEL)
    assert (profile_cli.DEFAULT_OUT, profile_cli.COVER_PCT, profile_cli.MAX_KERNELS, profile_cli.LAUNCHES_PER_KERNEL) \
        == (profile_core.DEFAULT_OUT, profile_core.COVER_PCT, profile_core.MAX_KERNELS, ncu_core.LAUNCHES_PER_KERNEL)
    assert (sanitize_cli.TOOL_NAMES, sanitize_cli.DEFAULT_OUT) == (",".join(TOOLS), sanitize_core.DEFAULT_OUT)


OLD_TYPER = """
import builtins, runpy, sys
real_import = builtins.__import__

def older_typer(name, globals=None, locals=None, fromlist=(), level=0):
    # What the GPU machine's Typer answers gpuprof (seen there): typer has no _coercion module.
    if name == "typer" and "_coercion" in (fromlist or ()) and (globals or {}).get("__name__") == "gpuprof.cli._app":
        raise ImportError("cannot import name '_coercion' from 'typer'")
    return real_import(name, globals, locals, fromlist, level)

builtins.__import__ = older_typer
sys.argv = ["gpuprof", *sys.argv[1:]]
runpy.run_module("gpuprof", run_name="__main__")
"""


@pytest.mark.parametrize(("argv", "code", "stream", "text"), [
    (["list", "vecadd"], 0, "stdout", "vecadd"),
    (["nsys", "vecadd", "--count", "lots"], 2, "stderr", "--count"),
])
def test_a_typer_without_its_coercion_module_still_runs_gpuprof(argv, code, stream, text):
    """The GPU machine's Typer (beside its PyTorch) has no typer._coercion: the pydantic shortcut
    must step aside there, not stop every command with an ImportError."""
    done = subprocess.run([sys.executable, "-c", OLD_TYPER, *argv], capture_output=True, text=True, check=False,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert text in getattr(done, stream)
