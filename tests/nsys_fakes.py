"""A stand-in for nsys in the CPU tests: recorded H100 output for `nsys profile` and `nsys stats`,
shared by tests/commands/test_nsys_profile.py and tests/cli/test_nsys_cli.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.errors import EnvironmentProblem
from gpuprof.tools import _proc
from gpuprof.tools._proc import Completed

TOOLS_DIR = Path(__file__).resolve().parent / "fixtures" / "tools"
EIGHT_REPORTS = (TOOLS_DIR / "nsys_2025.3.1_stats_csv_8_reports_stdout.txt").read_text()
SQLITE = TOOLS_DIR / "nsys_2025.3.2_export_small.sqlite"
# Recorded on the lent H100 (nsys 2025.3.1 bundled with Nsight Compute, libdw/libelf 0.188 carried) by
# `gpuprof nsys vecadd --variants grid,vectorized --size 2^20 --out /tmp/r/b`: the console output of
# `nsys profile` (REPORT stands for the report path) and the stdout of `nsys stats` for vecadd-grid.
PROFILE_OK = (
    "Collecting data...\nGenerating '/tmp/nsys-report-ea71.qdstrm'\n\n"
    "[1/1] [0%                          ] vecadd-grid.nsys-rep\n"
    "[1/1] [==========48%               ] vecadd-grid.nsys-rep\n"
    "[1/1] [========================100%] vecadd-grid.nsys-rep\nGenerated:\n\tREPORT\n"
)
# The same run without libdw.so.1 on LD_LIBRARY_PATH: stdout, then stderr
# (docs/tools.md, "nsys: the copy bundled with Nsight Compute").
PROFILE_IMPORTER_FAILED = (
    "Collecting data...\nGenerating '/tmp/nsys-report-beed.qdstrm'\nGenerated:\n\t/tmp/r/a/vecadd-grid.qdstrm\n",
    "Importer error status: An unknown error occurred.\nUnable to retrieve the importer version: "
    + "skipping importation of the QDSTRM file.\n",
)

class FakeNsys:
    """Stands in for `_proc.run`: answers nsys profile/stats with recorded output, records each argv.

    profile/stats are stdout text or (stdout, stderr); "REPORT" in the profile text becomes the report
    path, and that file is then created, as nsys would.
    """

    def __init__(self, profile=PROFILE_OK, stats=EIGHT_REPORTS, exit_codes: dict | None = None,
                 hang: frozenset[str] = frozenset(), stats_exit: int = 0) -> None:
        self.profile, self.stats, self.exit_codes, self.hang = profile, stats, exit_codes or {}, hang
        self.stats_exit = stats_exit
        self.calls: list[tuple[list[str], float, dict | None]] = []

    def __call__(self, argv, *, timeout_s, cwd=None, env=None):
        self.calls.append((list(argv), timeout_s, env))
        if argv[1] == "profile":
            base = next(a for a in argv if a.startswith("--output=")).split("=", 1)[1]
            if any(h in base for h in self.hang):
                raise EnvironmentProblem(f"nsys did not finish within {timeout_s:.0f} s")
            out, err = self.profile if isinstance(self.profile, tuple) else (self.profile, "")
            if "REPORT" in out:
                Path(base + ".nsys-rep").write_bytes(b"recorded elsewhere")
            code = next((c for k, c in self.exit_codes.items() if k in base), 0)
            return Completed(list(argv), code, out.replace("REPORT", base + ".nsys-rep"), err)
        assert argv[1] == "stats"
        out, err = self.stats if isinstance(self.stats, tuple) else (self.stats, "")
        return Completed(list(argv), self.stats_exit, out, err)

    def argvs(self, verb: str) -> list[list[str]]:
        return [a for a, _, _ in self.calls if a[1] == verb]


@pytest.fixture(name="fake")
def fake_nsys(monkeypatch):
    def install(**kw) -> FakeNsys:
        f = FakeNsys(**kw)
        monkeypatch.setattr(_proc, "run", f)
        return f
    return install
