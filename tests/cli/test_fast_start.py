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
                                  ["compare", "--help"], ["--version"]])
def test_start_imports_no_heavy_library(argv):
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == [], f"gpuprof {' '.join(argv)} imported {loaded}"
    assert done.stdout.strip()


def test_cli_defaults_kept_without_import_match_the_cores():
    from gpuprof.cli import nsys as nsys_cli
    from gpuprof.cli import run as run_cli
    from gpuprof.cli import sanitize as sanitize_cli
    from gpuprof.commands import nsys as nsys_core
    from gpuprof.commands import run as run_core
    from gpuprof.tools.sanitizer import TOOLS

    assert run_cli.DEFAULT_VARIANT_TIMEOUT_S == run_core.DEFAULT_VARIANT_TIMEOUT_S
    assert (nsys_cli.DEFAULT_OUT, nsys_cli.COUNT) == (nsys_core.DEFAULT_OUT, nsys_core.COUNT)
    assert sanitize_cli.TOOL_NAMES == ",".join(TOOLS)
