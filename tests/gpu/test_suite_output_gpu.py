"""On a GPU, as a CI log sees it (a real child process, stderr a pipe): `gpuprof suite` prints one
plain progress line per finished unit and no raw library warning; Inductor's TF32 warning (mnist's
torch.compile variant compiles float32 linears with TF32 off) becomes the † footnote of its row and
is kept in the row's JSON; `run` prints no library warning either."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import results

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
SUITE = ('schema = 1\nname = "output"\ntiming = { mode = "cold", max_time_s = 0.2, min_samples = 10 }\n'
         '[[case]]\nfamily = "vecadd"\nvariants = ["grid", "vectorized"]\nsizes = [{ n = 1048576 }]\n'
         '[[case]]\nfamily = "mnist"\nvariants = ["eager", "compiled"]\n')
LINE = re.compile(r"^\[[ \d]+/4 +\d+:\d\d ETA +\d+:\d\d\] (vecadd|mnist) \S+ \S+  OK  \S+ \S+  \S+ (GB|TFLOP)/s$")
FOOTNOTE = "† PyTorch warned that TF32 tensor cores were available but off"


def _gpuprof(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuprof", *args], cwd=REPO, capture_output=True, text=True,
                          check=False, timeout=timeout, env={**os.environ, "COLUMNS": "120"})


def test_a_suite_in_a_log_has_one_line_per_unit_and_the_tf32_warning_as_a_footnote(tmp_path):
    pytest.importorskip("torch")
    suite, out = tmp_path / "output.toml", tmp_path / "output.json"
    suite.write_text(SUITE)
    done = _gpuprof("suite", str(suite), "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 4 and all(LINE.match(line) for line in lines), done.stderr  # nothing else on stderr
    assert "TensorFloat32" not in done.stdout + done.stderr and "Warning" not in done.stderr
    rows = {r.variant: r for r in results.load(out).rows}
    tf32 = [name for name, row in rows.items() if any("TensorFloat32" in w["message"] for w in row.warnings)]
    assert tf32 == ["compiled"], {name: row.warnings for name, row in rows.items()}
    assert " ".join(done.stdout.split()).count(FOOTNOTE) == 1
    assert re.search(r"^compiled \(vendor\) †", done.stdout, re.MULTILINE), done.stdout


def test_run_prints_no_library_warning(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "run.json"
    done = _gpuprof("run", "mnist", "--variants", "eager,compiled", "--max-time", "0.2", "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "" and "TensorFloat32" not in done.stdout, done.stderr
    # Inductor warns only when it compiles: after the suite above, the compiled graph may come from
    # its cache and no warning is raised. The footnote is there exactly when a row carries it.
    warned = any("TensorFloat32" in w["message"] for row in results.load(out).rows for w in row.warnings)
    assert " ".join(done.stdout.split()).count(FOOTNOTE) == (1 if warned else 0)
