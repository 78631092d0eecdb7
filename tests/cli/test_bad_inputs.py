"""Every bad input a new user can give, command by command: the README's "every error is one line".

Each case: the command, its expected exit code, exactly one line on stderr (starting 'error:'),
no traceback, and every input file unchanged (hashed before and after). Nothing here needs a GPU
or a profiler: any GPU access fails the case with exit 3, and PATH holds no Nsight tool.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from gpuprof import gpu
from gpuprof.cli import app
from gpuprof.errors import EnvironmentProblem
from gpuprof.variants import catalog

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "tests" / "fixtures" / "results" / "smoke_a.json"
GOOD_CU = ('extern "C" __global__ void k(const float* __restrict__ a, const float* __restrict__ b, '
           'float* __restrict__ c, int n) {}\n')
FAMILIES = catalog.family_names()

# Hostile files, written into the test's folder as {name}.
HOSTILE = {
    "binary.bin": bytes(range(256)) * 8,
    "utf16.txt": "schema = 1\n".encode("utf-16"),
    "latin1.txt": "# René ©\nname = 1\n".encode("latin-1"),
    "empty.txt": b"",
    "truncated.json": b'{"schema": "gpuprof.results", "schema_version": 1, "rows": [',
    "list.json": b"[1, 2, 3]",
    "future.json": b'{"schema": "gpuprof.results", "schema_version": 99, "environment": {}, "rows": []}',
    "notes.md": b"my own notes\n",
    "nul.toml": b"schema = 1\x00\n",
    "nofamily.json": (b'{"schema": "gpuprof.results", "schema_version": 1, "environment": {}, "rows": '
                      b'[{"variant": "grid", "size": {"n": 1}, "vendor": false, "check": {"status": "ok"}}]}'),
}
HOSTILE_INPUTS = [*HOSTILE, "folder", "missing.txt"]


def _typo(name: str) -> str:
    return name[:-1] + ("x" if name[-1] != "x" else "y")


def _cases() -> list[tuple[str, list[str], int]]:
    cases: list[tuple[str, list[str], int]] = []

    def add(group: str, argv: list[str], code: int = 2) -> None:
        cases.append((group, argv, code))

    # -------- top level
    for argv in (["frobnicate"], ["lst"], ["rnu", "vecadd"], ["--bogus"], ["--versoin"]):
        add("gpuprof", argv)
    # -------- list
    for fam in FAMILIES:
        add("list", ["list", _typo(fam)])
    for argv in (["list", "--json", "{tmp}/no/l.json"], ["list", "--json", "{tmp}/notes.md"],
                 ["list", "--json", "{tmp}/folder"], ["list", "vecadd", "matmul"], ["list", "--jsn", "-"]):
        add("list", argv)
    # -------- compare
    for name in HOSTILE_INPUTS:
        if name != "notes.md":
            add("compare", ["compare", f"{{tmp}}/{name}", "{tmp}/good.json"])
            add("compare", ["compare", "{tmp}/good.json", f"{{tmp}}/{name}"])
    for argv in (["compare", "{tmp}/good.json", "{tmp}/good2.json", "--markdown", "{tmp}/good2.json"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--markdown", "{tmp}/good.json"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--json", "{tmp}/good2.json"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--json", "{tmp}/link.json"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--markdown", "{tmp}/notes.md"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--markdown", "{tmp}/no/s.md"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--markdown", "{tmp}/o.md", "--json", "{tmp}/o.md"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--preset", "bogus"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--format", "xml"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--format", "json", "--json", "{tmp}/x.json"],
                 ["compare", "{tmp}/good.json"], ["compare"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--allow-different-gpus"]):
        add("compare", argv)
    # -------- suite
    for name in HOSTILE_INPUTS:
        add("suite", ["suite", f"{{tmp}}/{name}"])
    for body in ('schema = 2\n[[case]]\nfamily = "vecadd"\n', 'schema = 1\n',
                 'schema = 1\n[[case]]\nfamily = "vecad"\n',
                 'schema = 1\n[[case]]\nfamily = "vecadd"\nvariants = ["nope"]\n',
                 'schema = 1\n[[case]]\nfamily = "vecadd"\nsizes = [{ n = 0 }]\n',
                 'schema = 1\n[[case]]\nfamily = "vecadd"\nsizes = [{ m = 4 }]\n',
                 'schema = 1\n[timing]\nmode = "warm"\n[[case]]\nfamily = "vecadd"\n',
                 'schema = 1\n[[case]]\nfamly = "vecadd"\n', 'schema = 1\nname = [\n',
                 'schema = 1\nkernels_dir = "nope"\n[[case]]\nfamily = "vecadd"\n'):
        add("suite", ["suite", f"{{tmp}}/s{len(cases)}.toml", "--suite-body", body])
    for argv in (["suite", "{tmp}/good.toml", "--json", "{tmp}/good.toml"], ["suite", "{tmp}/good.toml", "--json", "-"],
                 ["suite", "{tmp}/good.toml", "--json", "{tmp}/notes.md"],
                 ["suite", "{tmp}/good.toml", "--json", "{tmp}/no/r.json"],
                 ["suite", "{tmp}/good.toml", "--timeout", "0"], ["suite", "{tmp}/good.toml", "--timeout", "-1"],
                 ["suite", "{tmp}/good.toml", "--jsn", "r.json"], ["suite"]):
        add("suite", argv)
    # -------- run (and the options it shares with build, ncu, sanitize)
    for fam in FAMILIES:
        add("run", ["run", _typo(fam)])
        add("run", ["run", fam, "-v", "nope"])
        add("run", ["run", fam, "-D", "NOT_A_PARAM=3"])
    for size in ("0", "-3", "abc", "2^99999", "1e400", "10^10000", "1x2x3x4", "", "x", "n=", "2^-1", "nan", "4096x"):
        add("run", ["run", "vecadd", "--size", size])
    for define in ("BM", "BM=x", "1X=3", "=3", "BM=", "bm=64", "BM=0x"):
        add("run", ["run", "matmul", "-D", define])
    for name in HOSTILE_INPUTS:
        add("run", ["run", "vecadd", "--add", f"{{tmp}}/{name}"])
    for argv in (["run", "vecadd", "--add", "{tmp}/k.cu", "--add", "{tmp}/k.cu"],
                 ["run", "vecadd", "--add", "{tmp}/k.cu:nope"],
                 ["run", "vecadd", "--add", "{tmp}/k.cu", "--block", "0"],
                 ["run", "vecadd", "--add", "{tmp}/k.cu", "--block", "2048"],
                 ["run", "vecadd", "--add", "{tmp}/k.cu", "--tile", "a"],
                 ["run", "vecadd", "--add", "{tmp}/k.cu", "--grid", "sideways"], ["run", "vecadd", "--block", "128"],
                 ["run", "vecadd", "--tile", "128"], ["run", "vecadd", "--grid", "one"],
                 ["run", "matmul", "--add", "{tmp}/k.cu"],
                 ["run", "vecadd", "--add", "{tmp}/k.cu", "--json", "{tmp}/k.cu"],
                 ["run", "vecadd", "--json", "{tmp}/notes.md"], ["run", "vecadd", "--json", "{tmp}/no/r.json"],
                 ["run", "vecadd", "--json", "{tmp}/folder"], ["run", "vecadd", "--kernels-dir", "{tmp}/nope"],
                 ["run", "vecadd", "--kernels-dir", "{tmp}/k.cu"], ["run", "vecadd", "--kernels-dir", "{tmp}/folder"],
                 ["run", "vecadd", "--timing", "warm"], ["run", "vecadd", "--min-samples", "0"],
                 ["run", "vecadd", "--min-samples", "many"], ["run", "vecadd", "--max-time", "0"],
                 ["run", "vecadd", "--baseline", "zzz"], ["run", "vecadd", "--timeout", "-1"],
                 ["run", "vecadd", "--variant", "grid"], ["run", "vecadd", "--size"], ["run", "vecadd", "-v", ","],
                 ["run", "matmul", "-v", "blocktile_2d", "-D", "TM=0"], ["run"], ["run", "vecadd", "extra"],
                 ["run", "vecadd", "--target-spread", "x"], ["run", "vecadd", "--target-spread", "0"],
                 ["run", "vecadd", "--target-spread", "1.5"], ["run", "vecadd", "--max-time", "-2"]):
        add("run", argv)
    for name in ("binary.bin", "utf16.txt", "latin1.txt", "empty.txt", "nul.toml", "notes.md"):
        add("run", ["run", "vecadd", "--kernels-dir", f"{{tmp}}/kd-{name}"])
    # -------- build
    for fam in FAMILIES:
        add("build", ["build", _typo(fam)])
    for argv in (["build", "-v", "naive"], ["build", "matmul", "-v", "nope"], ["build", "matmul", "-D", "NOPE=1"],
                 ["build", "matmul", "-D", "bm=64"], ["build", "matmul", "-D", "BM=x"],
                 ["build", "vecadd", "--add", "{tmp}/k.cu", "--json", "{tmp}/k.cu"],
                 ["build", "--json", "{tmp}/notes.md"],
                 ["build", "--json", "{tmp}/no/b.json"], ["build", "vecadd", "--add", "{tmp}/binary.bin"],
                 ["build", "vecadd", "--kernels-dir", "{tmp}/folder"], ["build", "vecadd", "--block", "64"],
                 ["build", "vecadd", "matmul"]):
        add("build", argv)
    if shutil.which("nvcc"):
        for arch in ("sm_999", "sm90", "hopper", "compute_1"):
            add("build", ["build", "vecadd", "--arch", arch])
    # -------- new
    for argv in (["new", "vecadd", "my-kernel"], ["new", "vecadd", "1abc"], ["new", "vecadd", "grid"],
                 ["new", "vecadd", "a" * 300], ["new", "vecadd", "mine", "--dir", "{tmp}/nope"],
                 ["new", "vecadd", "mine", "--dir", "{tmp}/k.cu"], ["new", "vecadd", "k", "--dir", "{tmp}"],
                 ["new", "vecad", "mine"], ["new", "vecadd"], ["new"], ["new", "vecadd", ""], ["new", "vecadd", "a b"]):
        add("new", argv)
    # -------- ncu
    for fam in FAMILIES:
        add("ncu", ["ncu", _typo(fam)])
    for argv in (["ncu"], ["ncu", "--import", "{tmp}/missing.ncu-rep"], ["ncu", "--import", "{tmp}/folder"],
                 ["ncu", "vecadd", "--import", "{tmp}/binary.bin"], ["ncu", "vecadd", "--", "python", "x.py"],
                 ["ncu", "vecadd", "-v", "nope"], ["ncu", "vecadd", "--clock-control", "boost"],
                 ["ncu", "vecadd", "--plot", "{tmp}/no/r.png"], ["ncu", "vecadd", "--plot", "{tmp}/notes.md"],
                 ["ncu", "--import", "{tmp}/binary.bin", "--json", "{tmp}/binary.bin"],
                 ["ncu", "vecadd", "--json", "{tmp}/notes.md"], ["ncu", "matmul", "-D", "NOPE=1"],
                 ["ncu", "vecadd", "--add", "{tmp}/missing.cu"], ["ncu", "vecadd", "--kernels-dir", "{tmp}/folder"],
                 ["ncu", "./app"], ["ncu", "vecadd", "--size", "0"], ["ncu", "vecadd", "--varients", "grid"]):
        add("ncu", argv)
    # -------- nsys
    for fam in FAMILIES:
        add("nsys", ["nsys", _typo(fam)])
    for argv in (["nsys"], ["nsys", "--import", "{tmp}/notes.md"], ["nsys", "--import", "{tmp}/missing.sqlite"],
                 ["nsys", "--import", "{tmp}/binary.bin"], ["nsys", "--import", "{tmp}/folder"],
                 ["nsys", "vecadd", "-v", "nope"], ["nsys", "vecadd", "--size", "abc"],
                 ["nsys", "vecadd", "--json", "{tmp}/notes.md"], ["nsys", "vecadd", "--json", "{tmp}/no/n.json"],
                 ["nsys", "./app", "--flag"], ["nsys", "vecadd", "--count", "lots"],
                 ["nsys", "matmul", "-D", "NOPE=1"], ["nsys", "matmul", "-v", "blocktile_2d", "-D", "bm=64"],
                 ["nsys", "vecadd", "--add", "{tmp}/missing.cu"], ["nsys", "vecadd", "--add", "{tmp}/utf16.txt"],
                 ["nsys", "vecadd", "--block", "32"], ["nsys", "vecadd", "--kernels-dir", "{tmp}/folder"],
                 ["nsys", "-D", "BM=64", "--", "python", "x.py"],
                 ["nsys", "--import", "{tmp}/k.cu", "--add", "{tmp}/k.cu"],
                 ["nsys", "--import", "{tmp}/other.sqlite"], ["nsys", "--import", "{tmp}/blank.sqlite"],
                 ["nsys", "--import", "{tmp}/garbage.sqlite"]):
        add("nsys", argv)
    # -------- sanitize
    for fam in FAMILIES:
        add("sanitize", ["sanitize", _typo(fam)])
    for name in HOSTILE_INPUTS:
        add("sanitize", ["sanitize", "--import", f"{{tmp}}/{name}"])
    for argv in (["sanitize", "vecadd", "--tool", "leakcheck"], ["sanitize", "vecadd", "--tool", ","],
                 ["sanitize", "vecadd", "--jobs", "0"], ["sanitize", "vecadd", "-v", "nope"],
                 ["sanitize", "matmul", "-D", "NOPE=1"], ["sanitize", "vecadd", "--import", "{tmp}/notes.md"],
                 ["sanitize", "vecadd", "--", "python", "x.py"], ["sanitize", "./app"],
                 ["sanitize", "vecadd", "--add", "{tmp}/utf16.txt"], ["sanitize", "vecadd", "--json", "{tmp}/notes.md"],
                 ["sanitize", "--import", "{tmp}/notes.md", "--json", "{tmp}/notes.md", "--force"],
                 ["sanitize", "vecadd", "--size", "-1"], ["sanitize", "vecadd", "--block", "32"],
                 ["sanitize", "--import", "{tmp}/notes.md", "--tool", "racecheck"]):
        add("sanitize", argv)
    # -------- devicequery, doctor, launch
    for command in ("devicequery", "doctor"):
        for argv in ([command, "--json", "{tmp}/notes.md"], [command, "--json", "{tmp}/no/d.json"],
                     [command, "--json"], [command, "extra"]):
            add(command, argv)
    for argv in (["launch", "vecadd", "bogus"], ["launch", "matmul", "naive", "--size", "1x2"],
                 ["launch", "matmul", "warptile", "-D", "BM=zz"], ["launch", "vecad", "grid"],
                 ["launch", "vecadd", "grid", "--count", "x"]):
        add("launch", argv)
    return cases


CASES = _cases()


def test_there_are_at_least_250_cases_across_every_command():
    groups = {group for group, _, _ in CASES}
    assert len(CASES) >= 250, len(CASES)
    assert {"list", "build", "run", "suite", "compare", "ncu", "nsys", "sanitize", "new", "devicequery",
            "doctor", "launch"} <= groups


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """The test's folder with every hostile file, two good results files, a good suite and kernel."""
    for name, data in HOSTILE.items():
        (tmp_path / name).write_bytes(data)
        kd = tmp_path / f"kd-{name}"
        kd.mkdir()
        (kd / "vecadd.toml").write_bytes(data)
    (tmp_path / "folder").mkdir()
    shutil.copy(RESULTS, tmp_path / "good.json")
    shutil.copy(RESULTS, tmp_path / "good2.json")
    (tmp_path / "link.json").symlink_to(tmp_path / "good.json")
    (tmp_path / "good.toml").write_text('schema = 1\n[[case]]\nfamily = "vecadd"\n')
    (tmp_path / "k.cu").write_text(GOOD_CU)
    with closing(sqlite3.connect(tmp_path / "other.sqlite")) as db:  # an SQLite file that is no nsys export
        db.execute("CREATE TABLE notes (id INTEGER, text TEXT)")
        db.commit()
    (tmp_path / "blank.sqlite").write_bytes(b"")
    (tmp_path / "garbage.sqlite").write_bytes(HOSTILE["binary.bin"])

    def no_access() -> int:
        raise EnvironmentProblem("GPU accessed before the command line was validated")

    gpu.device_info.cache_clear()
    monkeypatch.setattr(gpu, "require_gpu", no_access)
    monkeypatch.setenv("PATH", str(Path(shutil.which("nvcc") or "/nonexistent").parent))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    gpu.device_info.cache_clear()


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize(("group", "argv", "code"), CASES,
                         ids=[f"{g}: {' '.join(a)[:70]}" for g, a, _ in CASES])
def test_bad_input_is_one_line(workspace, runner, group, argv, code):
    argv = [a.replace("{tmp}", str(workspace)) for a in argv]
    if "--suite-body" in argv:
        at = argv.index("--suite-body")
        Path(argv[1]).write_text(argv[at + 1])
        argv = argv[:at]
    before = _hashes(workspace)
    result = runner.invoke(app, argv)
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit), f"crashed: {result.exception!r}\n{result.output}"
    assert result.exit_code == code, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert len(lines[0]) < 600, lines[0]
    assert not re.search(r"[A-Za-z]+Error\b|Errno", lines[0]), f"names Python's internals: {lines[0]}"
    assert _hashes(workspace) == before, "an input file changed"
