"""Every bad input a new user can give, command by command and kind by kind: the README's "every
error is one line".

Each case: the command, the kind of input (a typo, a device or FIFO given as a file, a hand-edited
results file, an option where it does not apply, a repeated option, a number out of range, ...), its
expected exit code, exactly one line on stderr (starting 'error:'), no traceback, and every input
file unchanged (hashed before and after). Nothing here needs a GPU or a profiler: any GPU access
fails the case with exit 3, and PATH holds no Nsight tool. Cases that give a FIFO run in a child
process with a timeout, so a reader that blocks fails the case instead of hanging the suite.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
import typer

from gpuprof import gpu
from gpuprof.cli import app
from gpuprof.cli._applies import APPLIES, RANGES
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


Case = tuple[str, str, list[str], int]  # (command, kind, argv, exit code)


def _cases() -> list[Case]:
    cases: list[Case] = []

    def add(group: str, argv: list[str], code: int = 2, kind: str = "usage") -> None:
        cases.append((group, kind, argv, code))

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
    for argv in (["suite", "{tmp}/good.toml", "--json", "{tmp}/good.toml"],
                 ["suite", "{tmp}/good.toml", "--json", "-"],
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
    # -------- new-family ("folder" exists in the workspace: never overwritten)
    for argv in (["new-family", "my-op"], ["new-family", "1abc"], ["new-family", "a" * 300], ["new-family", ""],
                 ["new-family", "a b"], ["new-family"], ["new-family", "folder", "--dir", "{tmp}"],
                 ["new-family", "mine", "--dir", "{tmp}/nope"], ["new-family", "mine", "--dir", "{tmp}/k.cu"]):
        add("new-family", argv)
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


# -------- the kinds the issue-27 trial found, generated from the commands themselves where it can be
# What to type for an option when it only has to be given (not judged): by parameter name.
SAMPLE = {
    "variants": ["-v", "grid"], "size": ["--size", "1024"], "define": ["-D", "BM=64"], "add": ["--add", "{tmp}/k.cu"],
    "block": ["--block", "32"], "tile": ["--tile", "32"], "grid": ["--grid", "one"], "name": ["--name", "mine"],
    "require": ["--require", "N%32==0"],
    "kernels_dir": ["--kernels-dir", "{tmp}/folder"], "ladder": ["--ladder"], "kernel": ["--kernel", "k"],
    "nvtx_include": ["--nvtx-include", "x/"], "launch_skip": ["--launch-skip", "1"],
    "launch_count": ["--launch-count", "1"], "per_kernel": ["--launches-per-kernel", "2"],
    "clock_control": ["--clock-control", "base"], "section": ["--section", "SpeedOfLight"],
    "set_name": ["--set", "full"], "metrics": ["--metrics", "x"], "out": ["--out", "{tmp}/o"],
    "per_launch": ["--per-launch"], "count": ["--count", "2"], "timeout": ["--timeout", "5"], "jobs": ["-j", "2"],
    "no_skip": ["--no-skip"], "tool": ["--tool", "memcheck"], "sanitizer": ["--sanitizer", "/bin/true"],
    "leak_check": ["--leak-check"], "timing": ["--timing", "hot"], "min_samples": ["--min-samples", "5"],
    "max_time": ["--max-time", "1"], "target_spread": ["--target-spread", "0.01"],
    "discard_throttled": ["--discard-throttled"], "wide": ["--wide"], "top": ["--top", "2"], "cover": ["--cover", "80"],
}
# A command line in each mode of each command of the option table: (words before the option, after it).
MODE_ARGV = {
    ("ncu", "family"): (["ncu", "vecadd"], []), ("ncu", "command"): (["ncu"], ["--", "./app"]),
    ("ncu", "import"): (["ncu", "--import", "{tmp}/k.cu"], []),
    ("nsys", "family"): (["nsys", "vecadd"], []), ("nsys", "command"): (["nsys"], ["--", "./app"]),
    ("nsys", "import"): (["nsys", "--import", "{tmp}/other.sqlite"], []),
    ("sanitize", "family"): (["sanitize", "vecadd"], []), ("sanitize", "command"): (["sanitize"], ["--", "./app"]),
    ("sanitize", "import"): (["sanitize", "--import", "{tmp}/notes.md"], []),
    ("run", "timed"): (["run", "vecadd"], []), ("run", "check-only"): (["run", "vecadd", "--check-only"], []),
    ("compare", "table"): (["compare", "{tmp}/good.json", "{tmp}/good2.json"], []),
    ("compare", "json"): (["compare", "{tmp}/good.json", "{tmp}/good2.json", "--format", "json"], []),
    ("profile", "ranked"): (["profile"], ["--", "./app"]),
    ("profile", "nvtx"): (["profile", "--nvtx", "mm"], ["--", "./app"]),
}
# A command line each command accepts up to its options (ranges: in the mode where the option applies).
BASE_ARGV = {
    "run": (["run", "vecadd"], []), "suite": (["suite", "{tmp}/good.toml"], []),
    "launch": (["launch", "vecadd", "grid"], []),
    "ncu": (["ncu"], ["--", "./app"]), "nsys": (["nsys", "vecadd"], []), "sanitize": (["sanitize", "vecadd"], []),
    "profile": (["profile"], ["--", "./app"]),
}
# Results files as a hand (or an older gpuprof) might leave them: (name, change to the good file).
EDITED = {
    "size-fraction": lambda d: d["rows"][0]["size"].update(n=1.5),
    "size-negative": lambda d: d["rows"][0]["size"].update(n=-4),
    "size-zero": lambda d: d["rows"][0]["size"].update(n=0),
    "size-text": lambda d: d["rows"][0]["size"].update(n="1024"),
    "size-huge": lambda d: d["rows"][0]["size"].update(n=1e300),
    "size-list": lambda d: d["rows"][0].update(size=[1024]),
    "bytes-negative": lambda d: d["rows"][0].update(bytes=-100.0),
    "flop-negative": lambda d: d["rows"][-1].update(flop=-2.0e9),
    "bytes-infinite": lambda d: d["rows"][0].update(bytes=float("inf")),
    "mode-unknown": lambda d: d["rows"][0]["timing"].update(mode="warp"),
    "mode-missing": lambda d: d["rows"][0]["timing"].pop("mode"),
    "summary-partial": lambda d: d["rows"][0]["timing"].update(summary={"n": 3}),
    "summary-list": lambda d: d["rows"][0]["timing"].update(summary=[1, 2]),
    "timing-extra-key": lambda d: d["rows"][0]["timing"].update(bogus=1),
    "check-null": lambda d: d["rows"][0].update(check=None),
    "check-extra-key": lambda d: d["rows"][0]["check"].update(bogus=1),
    "rows-null": lambda d: d.update(rows=None),
    "rows-object": lambda d: d.update(rows={"a": 1}),
    "environment-null": lambda d: d.update(environment=None),
    "environment-list": lambda d: d.update(environment=[]),
    "family-null": lambda d: d["rows"][0].update(family=None),
    "variant-number": lambda d: d["rows"][0].update(variant=3),
    "defines-fraction": lambda d: d["rows"][0].update(defines={"BM": 1.5}),
    "flop-count-unknown": lambda d: d["rows"][0].update(flop_count="guessed"),
    "policy-list": lambda d: d.update(timing_policy=[1]),
}
# Non-regular files given where a file is read: a FIFO with no writer, /dev/zero, /dev/null.
SPECIALS = ("fifo", "dev-zero", "dev-null")
SUITE_BODIES = {
    "deep-nesting": "schema = 1\nx = " + "[" * 5000 + "]" * 5000 + "\n",
    "sweep-too-big": ('schema = 1\n[[sweep]]\nfamily = "matmul"\nvariant = "blocktile_2d"\nparams = { '
                      + ", ".join(f"{p} = {list(range(1, 101))}" for p in ("BM", "BN", "BK", "TM", "TN"))
                      + " }\n"),
    "sweep-unknown-define": ('schema = 1\n[[sweep]]\nfamily = "matmul"\nvariant = "blocktile_2d"\n'
                             'params = { NOPE = [1, 2] }\n'),
    "size-over-32-bit": 'schema = 1\n[[case]]\nfamily = "vecadd"\nsizes = [{ n = 1099511627776 }]\n',
    "size-fraction": 'schema = 1\n[[case]]\nfamily = "vecadd"\nsizes = [{ n = 1.5 }]\n',
    "size-text": 'schema = 1\n[[case]]\nfamily = "vecadd"\nsizes = [{ n = "1024" }]\n',
    "kernels-dir-without-manifest": 'schema = 1\nkernels_dir = "folder"\n[[case]]\nfamily = "vecadd"\n',
    "timing-nan": 'schema = 1\n[timing]\nmax_time_s = nan\n[[case]]\nfamily = "vecadd"\n',
    "timing-inf-spread": 'schema = 1\n[timing]\ntarget_spread = inf\n[[case]]\nfamily = "vecadd"\n',
    "variants-empty": 'schema = 1\n[[case]]\nfamily = "vecadd"\nvariants = []\n',
    "control-text": 'schema = 1\n[[case]]\nfamily = "vecadd"\ncontrol = "yes"\n',
    "huge-integer": "schema = 1\n[[case]]\nfamily = \"vecadd\"\nsizes = [{ n = " + "9" * 30 + " }]\n",
}


def _cli_commands() -> dict[str, typer.core.TyperCommand]:
    return typer.main.get_command(app).commands  # type: ignore[attr-defined]


def _single_valued_options(command) -> list[str]:
    return [max(p.opts, key=len) for p in command.params
            if p.param_type_name == "option" and not p.is_flag and not p.multiple and not p.count]


def _new_kinds() -> list[Case]:
    cases: list[Case] = []

    def add(group: str, kind: str, argv: list[str], code: int = 2) -> None:
        cases.append((group, kind, argv, code))

    # Options given where they do nothing, from the option table itself.
    for command, modes in APPLIES.items():
        for name, allowed in modes.only.items():
            for mode in modes.modes:
                if mode not in allowed:
                    before, after = MODE_ARGV[(command, mode)]
                    add(command, "ignored option", [*before, *SAMPLE[name], *after])
    # Every single-valued option of every command, given twice.
    for name, command in _cli_commands().items():
        for option in _single_valued_options(command):
            add(name, "repeated option", [name, option, "1", option, "2"])
    add("run", "repeated option", ["run", "vecadd", "-D", "BM=16", "-D", "BM=8"])
    add("build", "repeated option", ["build", "matmul", "-D", "BM=16", "-D", "BM=8"])
    add("gpuprof", "repeated option", ["--version", "extra"])
    # Numbers out of range or not finite, named by their option.
    for name, command in _cli_commands().items():
        if name not in BASE_ARGV:
            continue
        before, after = BASE_ARGV[name]
        for param in command.params:
            if param.name not in RANGES or param.param_type_name != "option":
                continue
            flag = max(param.opts, key=len)
            rule = RANGES[param.name]
            low = rule.low if rule.low is not None else 0
            values = [str(int(low) - 1), "-1000000"]
            if rule.low_open:
                values.append(str(low))
            if param.type_descriptor.annotation is float:
                values += ["nan", "inf", "-inf"]
            if rule.high is not None:
                values.append(str(rule.high + 1))
            for value in dict.fromkeys(values):
                if name == "ncu" and param.name not in APPLIES["ncu"].only:
                    before_, after_ = ["ncu", "--import", "{tmp}/k.cu"], []
                else:
                    before_, after_ = before, after
                add(name, "number out of range", [*before_, flag, value, *after_])
    # Hand-edited results files, wherever a results file is read.
    for edit in EDITED:
        add("show", "edited results", ["show", f"{{tmp}}/edited-{edit}.json"])
        add("compare", "edited results", ["compare", f"{{tmp}}/edited-{edit}.json", "{tmp}/good.json"])
        add("compare", "edited results", ["compare", "{tmp}/good.json", f"{{tmp}}/edited-{edit}.json"])
    for name in ("deep.json", "huge-int.json"):
        add("show", "edited results", ["show", f"{{tmp}}/{name}"])
        add("compare", "edited results", ["compare", "{tmp}/good.json", f"{{tmp}}/{name}"])
    # Devices and FIFOs where a file is read: refused at once, never read.
    for special in SPECIALS:
        at = f"{{tmp}}/{special}"
        for argv in (["show", at], ["compare", at, "{tmp}/good.json"], ["compare", "{tmp}/good.json", at],
                     ["compare", "--base", at, "{tmp}/good.json"], ["suite", at],
                     ["suite", "{tmp}/good.toml", "--gpus", "all", "--history", at],
                     ["run", "vecadd", "--add", at], ["build", "vecadd", "--add", at], ["ncu", "vecadd", "--add", at],
                     ["ncu", "--import", at], ["nsys", "--import", at], ["sanitize", "--import", at],
                     ["run", "vecadd", "--kernels-dir", f"{{tmp}}/kd-{special}"]):
            add(argv[0], f"{special} as input", argv)
    # Suite values: exit 2 before any GPU is asked.
    for kind, body in SUITE_BODIES.items():
        add("suite", "suite value", ["suite", f"{{tmp}}/suite-{kind}.toml", "--suite-body", body])
    for gpus in ("foo", "0,0", "-1", ",", "1.5"):
        add("suite", "suite value", ["suite", "{tmp}/good.toml", "--gpus", gpus])
    # Geometry that run would refuse is refused by every command that takes --add.
    for command in ("run", "build", "ncu", "sanitize"):
        for grid in ("per_sm:0", "per_sm:x", "per_sm:", "per_sm:-1"):
            add(command, "geometry", [command, "vecadd", "--add", "{tmp}/k.cu", "--grid", grid])
    # Outputs that cannot be written: a full device is the machine's state (exit 3), never a replaced file.
    for argv in (["list", "--json", "{tmp}/full"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--json", "{tmp}/full"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--markdown", "{tmp}/full"],
                 ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--export-gab", "{tmp}/full"]):
        add(argv[0], "full device", argv, 3)
    # Names and places the tools cannot take: a file name that is not UTF-8, a plot format no one writes.
    for command in ("run", "build", "ncu", "sanitize", "nsys"):
        add(command, "file name", [command, "vecadd", "--add", "{tmp}/k\udcff.cu"])
    for plot in ("roof.txt", "roof", "roof.jpeg.txt"):
        add("ncu", "file name", ["ncu", "--import", "{tmp}/k.cu", "--plot", f"{{tmp}}/{plot}"])
    for metrics in (",,,", "", " , "):
        add("ncu", "empty value", ["ncu", "--metrics", metrics, "--", "./app"])
    # A user's own files are not gpuprof's, whatever words they hold.
    for mine in ("mine.png", "mine-gpuprof.md", "mine.svg", "mine-list.json"):
        add("compare", "user file", ["compare", "{tmp}/good.json", "{tmp}/good2.json", "--markdown", f"{{tmp}}/{mine}"])
        add("list", "user file", ["list", "--json", f"{{tmp}}/{mine}"])
    return cases


CASES = _cases() + _new_kinds()


def test_there_are_at_least_500_cases_across_every_command_and_kind():
    groups = {group for group, _, _, _ in CASES}
    kinds = {kind for _, kind, _, _ in CASES}
    assert len(CASES) >= 500, len(CASES)
    assert {"list", "build", "run", "suite", "compare", "ncu", "nsys", "sanitize", "new", "new-family",
            "devicequery", "doctor", "launch", "show", "profile"} <= groups
    assert {"ignored option", "repeated option", "number out of range", "edited results", "fifo as input",
            "dev-zero as input", "dev-null as input", "suite value", "full device", "user file"} <= kinds


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
    _odd_files(tmp_path)

    def no_access() -> int:
        raise EnvironmentProblem("GPU accessed before the command line was validated")

    gpu.device_info.cache_clear()
    monkeypatch.setattr(gpu, "require_gpu", no_access)
    monkeypatch.setenv("PATH", str(Path(shutil.which("nvcc") or "/nonexistent").parent))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    gpu.device_info.cache_clear()


@functools.cache
def _odd_texts() -> dict[str, str]:
    """The hand-edited results files, made once for every case."""
    good = json.loads(RESULTS.read_text())
    texts = {}
    for edit, change in EDITED.items():
        data = json.loads(json.dumps(good))
        change(data)
        texts[f"edited-{edit}.json"] = json.dumps(data)
    texts["deep.json"] = '{"a": ' * 50_000 + "1" + "}" * 50_000
    texts["huge-int.json"] = RESULTS.read_text().replace('"n": 67108864', '"n": ' + "9" * 5001, 1)
    return texts


def _odd_files(folder: Path) -> None:
    """Devices, a FIFO, hand-edited results files and a user's own files, for _new_kinds."""
    os.mkfifo(folder / "fifo")
    for name, device in (("dev-zero", "/dev/zero"), ("dev-null", "/dev/null"), ("full", "/dev/full")):
        (folder / name).symlink_to(device)  # a link: were a writer to replace it, the link goes, not the device
    for special in SPECIALS:
        kd = folder / f"kd-{special}"
        kd.mkdir()
        (kd / "vecadd.toml").symlink_to(folder / special)
    for name, text in _odd_texts().items():
        (folder / name).write_text(text)
    (folder / "k\udcff.cu").write_text(GOOD_CU)  # a file name whose bytes are not UTF-8 (0xff)
    (folder / "mine.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))  # no gpuprof text chunk
    (folder / "mine-gpuprof.md").write_text("# my notes on gpuprof\n\nthings gpuprof taught me\n")
    (folder / "mine.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><!-- gpuprof --></svg>')
    (folder / "mine-list.json").write_text('{"schema": "mine", "note": "gpuprof"}')


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _links(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): os.readlink(p) for p in sorted(folder.rglob("*")) if p.is_symlink()}


def _in_child(argv: list[str], cwd: Path) -> tuple[int, str]:
    """The command in its own interpreter, stopped after 60 s: a reader that blocks on a FIFO fails
    the case instead of hanging the suite."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    env.pop("CUDA_HOME", None)
    env["PATH"] = str(Path(shutil.which("nvcc") or "/nonexistent").parent)
    try:
        done = subprocess.run([sys.executable, "-m", "gpuprof", *argv], capture_output=True, text=True, timeout=60,
                              cwd=cwd, env=env, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"gpuprof {' '.join(argv)} still running after 60 s (blocked on a FIFO?)")
    return done.returncode, done.stderr


@pytest.mark.parametrize(("group", "kind", "argv", "code"), CASES,
                         ids=[f"{g}: {k}: {' '.join(a)[:70]}" for g, k, a, _ in CASES])
def test_bad_input_is_one_line(workspace, runner, group, kind, argv, code):
    argv = [a.replace("{tmp}", str(workspace)) for a in argv]
    if "--suite-body" in argv:
        at = argv.index("--suite-body")
        Path(argv[1]).write_text(argv[at + 1])
        argv = argv[:at]
    before, links = _hashes(workspace), _links(workspace)
    if kind == "fifo as input":
        exit_code, stderr = _in_child(argv, workspace)
        assert "Traceback" not in stderr, stderr
    else:
        result = runner.invoke(app, argv)
        assert "Traceback" not in result.output
        assert isinstance(result.exception, SystemExit), f"crashed: {result.exception!r}\n{result.output}"
        exit_code, stderr = result.exit_code, result.stderr
    assert exit_code == code, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert len(lines[0]) < 600, lines[0]
    assert not re.search(r"[A-Za-z]+Error\b|Errno", lines[0]), f"names Python's internals: {lines[0]}"
    assert _hashes(workspace) == before, "an input file changed"
    assert _links(workspace) == links, "a link (to a device) was replaced"
