"""On a GPU with compute-sanitizer: racecheck on a CuPy RawKernel with a missing __syncthreads()
(tests/programs/cupy_race.py) shows both sides of the race — the write and the read that races
with it — each at its line in the program's own file, live and through `sanitize --import` of the
log the live run kept. Issue 24 item 7."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof.commands.sanitize import import_log, sanitize_command

pytestmark = pytest.mark.gpu
PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
PROGRAM = "cupy_race.py"


@pytest.fixture(autouse=True)
def sanitizer_and_cupy():
    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not on PATH")
    pytest.importorskip("cupy")


def bug_lines() -> dict[str, tuple[int, str]]:
    """'write' and 'read' -> (line, code) of the lines marked `// BUG (write)` / `// BUG (read)`."""
    found = {}
    for n, line in enumerate((PROGRAMS / PROGRAM).read_text().splitlines(), 1):
        for side in ("write", "read"):
            if f"// BUG ({side})" in line:
                found[side] = (n, line.split("//")[0].strip())
    assert set(found) == {"write", "read"}
    return found


def test_both_sides_of_the_race_are_at_their_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(PROGRAMS)
    (result,) = sanitize_command([sys.executable, PROGRAM], ["racecheck"], tmp_path).results
    assert result.error is None, result.error
    races = [f for f in result.findings if f.kind == "race_hazard"]
    assert races, [f.message for f in result.findings]
    expected = bug_lines()
    # the source line as written, its comment included
    sides = {(site.access, place.file, place.line, place.text.split("//")[0].strip()) for f in races
             for site in f.sites if (place := result.source_of(site)) is not None}
    assert ("Write", PROGRAM, *expected["write"]) in sides, sides
    assert ("Read", PROGRAM, *expected["read"]) in sides, sides
    # The kept log, imported: the same two sites, by NVRTC's name (the program's .py is not known there).
    assert result.log is not None
    imported = import_log(result.log)
    assert {s.access for f in imported.findings for s in f.sites} >= {"Write", "Read"}


def test_cli_prints_the_write_and_the_read(tmp_path):
    done = subprocess.run([sys.executable, "-m", "gpuprof", "sanitize", "--tool", "racecheck", "--out", str(tmp_path),
                           "--", sys.executable, PROGRAM], cwd=PROGRAMS, capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "COLUMNS": "120"})
    assert done.returncode == 1, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    for side, (line, code) in bug_lines().items():
        assert f"{side} {PROGRAM}:{line}" in out, out
        assert code in out
