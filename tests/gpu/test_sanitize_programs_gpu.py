"""On a GPU with compute-sanitizer: `gpuprof sanitize -- python prog.py` on programs gpuprof did not
write (tests/programs/) finds each planted bug and shows its real source line, in the program's
own file, not NVRTC's hashed name. Issue 14 item 4."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof.commands.sanitize import sanitize_command

pytestmark = pytest.mark.gpu
PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


def needs(*modules: str) -> None:
    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not on PATH")
    for name in modules:
        pytest.importorskip(name)


def bug_lines(program: str) -> dict[int, str]:
    lines = (PROGRAMS / program).read_text().splitlines()
    return {n: line.split("//")[0].strip() for n, line in enumerate(lines, 1) if "// BUG" in line}


@pytest.mark.parametrize(("program", "tool", "kind", "modules"), [
    ("cupy_oob.py", "memcheck", "invalid_write", ("cupy",)),
    ("torch_oob.py", "memcheck", "invalid_write", ("cupy", "torch")),
    ("cupy_race.py", "racecheck", "race_hazard", ("cupy",)),
])
def test_users_program_bug_is_found_at_its_real_line(tmp_path, monkeypatch, program, tool, kind, modules):
    needs(*modules)
    monkeypatch.chdir(PROGRAMS)
    (result,) = sanitize_command([sys.executable, program], [tool], tmp_path).results
    assert result.error is None, result.error
    found = [f for f in result.findings if f.kind == kind]
    assert found, f"{tool} found no {kind} in {program}: {[f.message for f in result.findings]}"
    expected = bug_lines(program)
    places = {(p.file, p.line, p.text) for p in map(result.source_of, found) if p is not None}
    assert any(file == program and line in expected and text.startswith(expected[line])
               for file, line, text in places), (places, expected)
    assert all(p.compiled_as for p in map(result.source_of, found) if p is not None)  # mapped from NVRTC's name


def test_cli_prints_the_line_and_exits_1(tmp_path):
    needs("cupy")
    done = subprocess.run([sys.executable, "-m", "gpuprof", "sanitize", "--tool", "memcheck", "--out", str(tmp_path),
                           "--", sys.executable, "cupy_oob.py"], cwd=PROGRAMS, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    (line, text), = bug_lines("cupy_oob.py").items()
    out = " ".join(done.stdout.split())
    assert f"cupy_oob.py:{line}" in out and text in out
