"""More hostile inputs of issue 37's kinds: a compile NVRTC never finishes, Ctrl-C and SIGTERM during
a write, two gpuprof processes writing one file, and imported reports holding impossible values.

Each CLI case asserts the exit code, at most one stderr line ('error: ...' when it fails), no
traceback, the inputs byte-identical, no file replaced, and a time bound (invoke, from the hostile
cases). NVRTC runs in a child process (gpuprof.variants.nvrtc_child); here the child imports a
stand-in libnvrtc (FAKE_NVRTC says how it answers), so the time limit is proven without a GPU or
the real library; one case runs the real NVRTC on a source whose macros expand 2^25 times.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof import files
from gpuprof.cli import app
from gpuprof.errors import TERMINATED_EXIT_CODE, Interrupted, Terminated
from gpuprof.parsers import ncu_rep
from gpuprof.parsers.ncu_metrics import impossible_value, row_from_metrics
from gpuprof.tools import _proc
from gpuprof.variants import nvrtc
from tests.cli.test_bad_inputs_hostile import (
    HOSTILE_NAMES,
    _hashes,
    _no_marker,
    _write,
    invoke,
    place,  # noqa: F401  (the fixture: a stand-in nvcc first on PATH)
)

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tests" / "fixtures" / "tools"
RESULTS = REPO / "tests" / "fixtures" / "results"
VECADD_LIKE = b'extern "C" __global__ void k(const float* a, const float* b, float* c, int n) { if (n) c[0] = a[0]; }\n'

# ---------------------------------------------------------------- NVRTC within the compile time limit

FAKE_NVRTC = '''
import os, signal, time
class NVRTCError(Exception):
    pass
MODE = os.environ.get("FAKE_NVRTC", "compile")
if MODE == "unavailable":
    raise ImportError("no libnvrtc here")
def getVersion():
    return (13, 0)
def createProgram(source, name, headers, names):
    return 1
def addNameExpression(program, name):
    pass
def compileProgram(program, options):
    if MODE == "slow":
        time.sleep(120)
    if MODE == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if MODE == "reject":
        raise NVRTCError()
def getProgramLog(program):
    return 'gpuprof-source.cu(1): error: identifier "INFINITY" is undefined'
def destroyProgram(program):
    pass
'''


class _StubLibrary:
    """What the parent asks of libnvrtc before it starts the child: that it loads, and its version."""

    @staticmethod
    def getVersion() -> tuple[int, int]:
        return (13, 0)


@pytest.fixture
def work(request: pytest.FixtureRequest) -> Path:
    """The hostile cases' working folder, with their stand-in nvcc first on PATH (their `place`)."""
    return request.getfixturevalue("place")


@pytest.fixture
def fake_nvrtc(work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A stand-in libnvrtc for the NVRTC child (first on its PYTHONPATH), verdicts kept in tmp_path;
    returns a function that sets how the stand-in answers."""
    libs = tmp_path / "fake-nvrtc" / "cupy_backends" / "cuda" / "libs"
    libs.mkdir(parents=True)
    for folder in (libs, libs.parent, libs.parent.parent):
        (folder / "__init__.py").write_text("")
    (libs / "nvrtc.py").write_text(FAKE_NVRTC)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "fake-nvrtc"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(nvrtc, "nvrtc_library", lambda: _StubLibrary)
    monkeypatch.setattr(nvrtc, "_VERDICTS", tmp_path / "verdicts")

    def mode(how: str) -> None:
        monkeypatch.setenv("FAKE_NVRTC", how)

    return mode


@pytest.mark.parametrize(("how", "code", "said"), [
    ("compile", 0, ""),
    ("reject", 2, 'NVRTC (what `gpuprof run` compiles with) does not: '),
    ("slow", 2, "NVRTC did not finish within 2 s"),
    ("crash", 2, "NVRTC ended without a verdict"),
    ("unavailable", 0, ""),
])
def test_nvrtc_in_build_answers_within_the_compile_time_limit(work, fake_nvrtc, how, code, said):
    fake_nvrtc(how)
    source = _write(work / "src", "mine.cu", VECADD_LIKE)
    err = invoke(work, ["build", "vecadd", "--add", str(source), "--compile-timeout", "2"], code, bound=15)
    assert said in err
    if how == "reject":
        assert "mine.cu:1: error" in err and "gpuprof-source.cu" not in err


def test_a_kept_verdict_starts_no_child(work, fake_nvrtc):
    fake_nvrtc("compile")
    source = _write(work / "src", "mine.cu", VECADD_LIKE)
    invoke(work, ["build", "vecadd", "--add", str(source)], 0)
    fake_nvrtc("slow")  # a child now would take 120 s: the kept verdict answers
    invoke(work, ["build", "vecadd", "--add", str(source), "--compile-timeout", "30"], 0, bound=10)


def test_a_timed_out_compile_is_never_kept(work, fake_nvrtc):
    fake_nvrtc("slow")
    source = _write(work / "src", "mine.cu", VECADD_LIKE)
    invoke(work, ["build", "vecadd", "--add", str(source), "--compile-timeout", "1"], 2, bound=10)
    fake_nvrtc("reject")
    invoke(work, ["build", "vecadd", "--add", str(source), "--compile-timeout", "1"], 2, bound=10)


@pytest.mark.parametrize("key", list(HOSTILE_NAMES))
def test_a_hostile_file_name_reaches_the_nvrtc_child_as_data(work, fake_nvrtc, key):
    fake_nvrtc("compile")
    folder = work / HOSTILE_NAMES[key]
    source = _write(folder, f"{HOSTILE_NAMES[key]}.cu", VECADD_LIKE)
    invoke(work, ["build", "vecadd", "--add", str(source)], 0)
    _no_marker(work, folder)


@pytest.mark.nvcc
def test_the_real_nvrtc_is_ended_at_the_compile_time_limit(work, tmp_path, monkeypatch):
    """nvcc never sees the 2^25-fold macro (it is for NVRTC only), so the build reaches NVRTC."""
    if nvrtc.nvrtc_library() is None:
        pytest.skip("NVRTC is not loadable here")
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])  # the real nvcc, not the stand-in
    monkeypatch.setattr(nvrtc, "_VERDICTS", tmp_path / "verdicts")
    lines = ["#ifdef __CUDACC_RTC__", "#define X0 1+"]
    lines += [f"#define X{i} X{i - 1} X{i - 1}" for i in range(1, 26)]
    kernel = 'extern "C" __global__ void k(const float* a, const float* b, float* c, int n) { if (n) c[0] = X25 1; }'
    lines += ["#else", "#define X25", "#endif", kernel]
    source = _write(work / "src", "bomb.cu", "\n".join(lines).encode() + b"\n")
    err = invoke(work, ["build", "vecadd", "--add", str(source), "--compile-timeout", "3"], 2, bound=60)
    assert "bomb.cu: NVRTC did not finish within 3 s" in err


def test_a_run_whose_worker_times_out_while_compiling_says_so():
    from gpuprof.commands import run as runner
    from gpuprof.measure import isolation
    from gpuprof.measure.timing import TimingPolicy
    from gpuprof.results import TIMEOUT
    from gpuprof.variants.catalog import load_family

    class Stuck:
        def run(self, *args, **kwargs):
            return isolation.JobOutcome(isolation.TIMED_OUT, detail="no answer within 300 s", last_event="compile")

    family = load_family("vecadd")
    row = runner._run_isolated(Stuck(), (family, family.variant("grid"), {"n": 4096}, TimingPolicy(), False),
                               lambda step: None)
    assert row.check.status == TIMEOUT
    assert "during compile" in row.check.reasons[0] and "expand without end" in row.check.reasons[0]


# ---------------------------------------------------------------- Ctrl-C and SIGTERM


def _gpuprof(*argv: str) -> list[str]:
    return [sys.executable, "-m", "gpuprof", *argv]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            "COLUMNS": "160"}


@pytest.fixture
def old_results(tmp_path: Path) -> tuple[Path, bytes]:
    """A results file gpuprof wrote earlier (a compare's JSON), for a later command to replace."""
    out = tmp_path / "out.json"
    done = subprocess.run(_gpuprof("compare", str(RESULTS / "smoke_a.json"), str(RESULTS / "smoke_b.json"),
                                   "--json", str(out)), env=_env(), capture_output=True, timeout=120, check=False)
    assert out.is_file(), done.stderr
    return out, out.read_bytes()


@pytest.mark.parametrize("delay", [0.4, 0.9, 1.6, 2.5])  # after Python's own start-up, which is not gpuprof's
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_a_write_leaves_the_old_file_or_a_whole_new_one(old_results, sig, delay):
    out, old = old_results
    inputs = {p: p.read_bytes() for p in (RESULTS / "h100_course_a.json.gz", RESULTS / "h100_course_b.json.gz")}
    start = time.monotonic()
    child = subprocess.Popen(_gpuprof("compare", *map(str, inputs), "--json", str(out)), env=_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay)
    child.send_signal(sig)
    _, raw = child.communicate(timeout=60)
    err = raw.decode()
    assert time.monotonic() - start < 60
    assert "Traceback" not in err and len(err.splitlines()) <= 1, err
    stopped = {signal.SIGINT: (130, -signal.SIGINT), signal.SIGTERM: (TERMINATED_EXIT_CODE, -signal.SIGTERM)}[sig]
    assert child.returncode in (*stopped, 0, 1), (child.returncode, err)  # 0 or 1: it had finished
    if child.returncode in stopped and err:
        assert err.startswith(("error: ", "interrupted;", "terminated;")), err
    data = out.read_bytes()
    assert data == old or json.loads(data)["schema"] == "gpuprof.compare"  # never half a file
    assert not glob.glob(str(out.parent / ".gpuprof.*")), "a temporary file was left behind"
    assert all(path.read_bytes() == data_ for path, data_ in inputs.items())


@pytest.mark.parametrize("where", ["in its own handler", "after it (Typer's own)"])
@pytest.mark.parametrize(("raised", "code", "word"), [
    (KeyboardInterrupt, 130, "interrupted"), (Terminated, TERMINATED_EXIT_CODE, "terminated")])
def test_a_stop_inside_a_command_is_one_line_with_its_exit_code(monkeypatch, raised, code, word, where):
    from gpuprof.cli import kernels
    from gpuprof.render import fit

    def stop(*args, **kwargs):
        raise raised()

    if where == "in its own handler":
        monkeypatch.setattr(kernels, "_families", stop)
    else:  # the table is printed outside the command's exit_on_error
        monkeypatch.setattr(fit, "print_table", stop)
    monkeypatch.setattr(files, "WRITTEN", [])
    result = CliRunner().invoke(app, ["list", "vecadd"])
    assert result.exit_code == code
    assert result.stderr.strip() == f"error: {word}; nothing was saved"


def test_a_stop_after_a_write_names_the_file_written(tmp_path, monkeypatch):
    from gpuprof.commands import compare as core

    out = tmp_path / "cmp.json"
    monkeypatch.setattr(files, "WRITTEN", [])

    def write_then_stop(*args, **kwargs):
        files.atomic_write_text(out, "{}")
        raise Terminated()

    monkeypatch.setattr(core, "execute", write_then_stop)
    result = CliRunner().invoke(app, ["compare", str(RESULTS / "smoke_a.json"), str(RESULTS / "smoke_b.json")])
    assert result.exit_code == TERMINATED_EXIT_CODE
    assert result.stderr.strip() == f"error: terminated; written before the stop: {out}"


@pytest.mark.parametrize("raised", [KeyboardInterrupt, Terminated])
def test_a_stop_inside_an_atomic_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch, raised):
    target = tmp_path / "out.json"
    target.write_text('{"schema": "gpuprof.compare"}\n')
    target.chmod(0o600)

    def stop(fd):
        raise raised()

    monkeypatch.setattr(files.os, "fsync", stop)
    with pytest.raises(raised):
        files.atomic_write_text(target, '{"schema": "gpuprof.compare", "new": 1}\n')
    assert target.read_text() == '{"schema": "gpuprof.compare"}\n' and (target.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_interrupted_keeps_130_and_a_terminated_one_143():
    assert Interrupted("x").exit_code == 130
    assert Interrupted("x", terminated=True).exit_code == TERMINATED_EXIT_CODE == 128 + signal.SIGTERM


# ---------------------------------------------------------------- two writers, one file


@pytest.mark.parametrize("existing", [False, True], ids=["new", "replaced"])
def test_two_gpuprof_processes_writing_one_file_both_leave_a_whole_file(old_results, existing):
    out, _ = old_results
    if not existing:
        out.unlink()
    argv = [_gpuprof("compare", str(RESULTS / a), str(RESULTS / b), "--json", str(out))
            for a, b in (("smoke_a.json", "smoke_b.json"), ("h100_ci_a.json", "h100_ci_b.json"))]
    children = [subprocess.Popen(a, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for a in argv]
    errors = [c.communicate(timeout=120)[1].decode() for c in children]
    for child, err in zip(children, errors, strict=True):
        assert child.returncode in (0, 1) and "Traceback" not in err and len(err.splitlines()) <= 1, err
    assert json.loads(out.read_bytes())["schema"] == "gpuprof.compare"
    assert not glob.glob(str(out.parent / ".gpuprof.*"))


# ---------------------------------------------------------------- impossible values in an ncu report

RAW_PAGE = TOOLS / "ncu_2025.3.1_raw_page_metrics.csv"
DETAILS_PAGE = TOOLS / "ncu_2025.3.1_details_page_default_basic_set.csv"


def _raw_page(metric: str, value: str) -> str:
    """The recorded raw page with one launch's (the first vecAdd's, ID 0) metric set to value."""
    lines = RAW_PAGE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    table = list(csv.reader(lines[start:]))
    table[2][table[0].index(metric)] = value  # row 0: names, row 1: units, row 2: the first launch
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(table)
    return out.getvalue()


class _PagesNcu:
    """ncu without the ncu_report module: `--import` answers with the pages given."""

    def __init__(self, raw: str) -> None:
        self.raw = raw

    def __call__(self, argv, *, timeout_s, cwd=None, env=None, isolated=False):
        argv = list(argv)
        if argv[1:3] == ["-m", "gpuprof.parsers.ncu_rep"]:
            return _proc.Completed(argv, ncu_rep.CHILD_UNAVAILABLE, "", "pip install ncu-report")
        page = argv[argv.index("--page") + 1]
        return _proc.Completed(argv, 0, self.raw if page == "raw" else DETAILS_PAGE.read_text(), "")


def _strict_json(text: str) -> dict:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the JSON: not a number JSON knows")

    return json.loads(text, parse_constant=refuse)


IMPOSSIBLE_NCU = [
    ("gpu__time_duration.sum", "-16,352", "negative"),
    ("gpu__time_duration.sum", "-1", "negative"),
    ("gpu__time_duration.sum", "0", "a launch takes time"),
    ("gpu__time_duration.sum", "nan", "not a number"),
    ("gpu__time_duration.sum", "NaN", "not a number"),
    ("gpu__time_duration.sum", "inf", "not a number"),
    ("gpu__time_duration.sum", "-inf", "not a number"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "-31.00", "negative"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "nan", "not a number"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "3100.00", "above 100 %"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "-5", "negative"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "500", "above 100 %"),
    ("launch__registers_per_thread", "-16", "negative"),
    ("dram__bytes.sum.per_second", "-1", "negative"),
    ("dram__bytes.sum.per_second", "inf", "not a number"),
    ("sm__cycles_elapsed.avg.per_second", "nan", "not a number"),
    ("gpu__time_duration.avg", "-5", "negative"),  # a counter gpuprof does not read: flagged all the same
    ("dram__throughput.max.pct_of_peak_sustained_elapsed", "nan", "not a number"),
]


@pytest.mark.parametrize(("metric", "value", "why"), IMPOSSIBLE_NCU,
                         ids=[f"{m}={v}" for m, v, _ in IMPOSSIBLE_NCU])
def test_an_impossible_ncu_value_is_flagged_on_its_row_not_shown(tmp_path, monkeypatch, metric, value, why):
    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")
    monkeypatch.setattr(_proc, "run", _PagesNcu(_raw_page(metric, value)))
    monkeypatch.setenv("COLUMNS", "200")
    report = _write(tmp_path, "r.ncu-rep", b"")
    mine = _write(tmp_path, "notes.md", b"mine\n")
    before = _hashes(tmp_path)
    start = time.monotonic()
    result = CliRunner().invoke(app, ["ncu", "--import", str(report), "--json", str(tmp_path / "n.json")])
    assert time.monotonic() - start < 20
    assert result.exit_code == 0 and result.stderr == "", (result.stderr, result.stdout[-800:])
    assert "Traceback" not in result.stdout
    after = _hashes(tmp_path)
    after.pop(str(tmp_path / "n.json"))
    assert after == before  # only the new output is new: inputs and the user's file as they were
    assert mine.read_bytes() == b"mine\n" and report.read_bytes() == b""
    shown = " ".join(result.stdout.split())
    assert "vecAdd !" in shown and "impossible in the report, left out" in shown
    assert "vecAdd(const float *, const float *, float *, int) (ID 0)" in shown and f"{metric} =" in shown
    assert f"({why})" in shown
    doc = _strict_json((tmp_path / "n.json").read_text())["run"]
    (launch,) = [r for result_ in doc["results"] for r in result_["rows"] if r["impossible"]]
    assert launch["id"] == 0 and any(f.startswith(f"{metric} = ") and f.endswith(f"({why})")
                                     for f in launch["impossible"])
    if metric == "gpu__time_duration.sum":
        assert launch["duration_ns"] is None
        (vecadd,) = [k for k in doc.get("kernels", []) or [] if k["name"].startswith("vecAdd")] or [None]
        if vecadd is not None:
            assert vecadd["total_ns"] == pytest.approx(18368.0)  # the other launch only


@pytest.mark.parametrize(("value", "why"), [(float("nan"), "not a number"), (float("-inf"), "not a number"),
                                            (-3.0, "negative"), (0.0, "a launch takes time")])
def test_the_ncu_report_reader_flags_what_the_csv_reader_flags(value, why):
    """ncu_report hands floats, not text: a NaN there is flagged the same way."""
    row = row_from_metrics({"ID": "7", "Kernel Name": "k"}, {"gpu__time_duration.sum": value}, {}, (), "row", None)
    assert row.duration_ns is None and row.impossible == (f"gpu__time_duration.sum = {value:g} ({why})",)
    assert isinstance(row.metrics["gpu__time_duration.sum"], str)  # never summed later as a number


@pytest.mark.parametrize(("name", "value", "why"), [
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 100.4, None),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 250.0, "above 100 %"),
    ("gpu__time_duration.sum", 1.0, None),
    ("dram__bytes.sum", 0.0, None),
    ("launch__occupancy_limit_blocks", -1.0, "negative"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", -5.0, "negative"),
    ("dram__bytes.sum", -0.01, "negative"),
])
def test_which_values_are_impossible(name, value, why):
    assert impossible_value(name, value) == why


TENSOR_PIPE_PCT = ("sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.min"
                   ".pct_of_peak_sustained_elapsed")


@pytest.mark.parametrize("value", [-0.0882503, -0.0240838, -0.000318133, -0.0002371])  # recorded, H200, ncu 2025.3
def test_an_idle_units_percentage_a_hair_below_zero_is_zero_not_impossible(value):
    """ncu derives a unit's % from counters, so a pipe a kernel never touches can read -0.09 %: the
    attention ladder's naive kernels and PyTorch's elementwise kernels did. That is zero, not a broken
    report: no 'impossible' line, and the % reads 0 wherever it is used."""
    row = row_from_metrics({"ID": "2", "Kernel Name": "attn_naive_pv"},
                           {"gpu__time_duration.sum": 6.361e6, TENSOR_PIPE_PCT: value}, {}, (), "row", None)
    assert row.impossible == ()
    assert row.metrics[TENSOR_PIPE_PCT] == 0.0


# ---------------------------------------------------------------- impossible times in an nsys export

SQLITE = TOOLS / "nsys_2025.3.2_export_small.sqlite"
FIRST_KERNEL = "WHERE rowid = (SELECT MIN(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"
IMPOSSIBLE_NSYS = {
    "ends-before-start": (f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 1000000000 {FIRST_KERNEL}",
                          "vecAdd", "end before they start"),
    "no-time": (f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start {FIRST_KERNEL}", "vecAdd", "take no time"),
    "negative-start": (f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -5000000000, end = -4000000000 {FIRST_KERNEL}",
                       "vecAdd", "start at a negative time"),
    "end-past-capture": (f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807 {FIRST_KERNEL}",
                         "vecAdd", "outside the capture"),
    "start-before-capture": (f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 1 {FIRST_KERNEL}",
                             "vecAdd", "outside the capture"),
    "every-kernel-no-time": ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start", "saxpy", "take no time"),
    "nvtx-ends-before-start": ("UPDATE NVTX_EVENTS SET end = start - 5 WHERE end IS NOT NULL",
                               "NVTX range outer", "end before they start"),
}


@pytest.mark.parametrize("case", list(IMPOSSIBLE_NSYS))
def test_an_impossible_time_in_an_nsys_export_is_named_and_left_out(tmp_path, monkeypatch, case):
    sql, name, why = IMPOSSIBLE_NSYS[case]
    export = tmp_path / "bad.sqlite"
    export.write_bytes(SQLITE.read_bytes())
    with closing(sqlite3.connect(export)) as db:
        db.execute(sql)
        db.commit()
    digest = hashlib.sha256(export.read_bytes()).hexdigest()
    monkeypatch.setenv("COLUMNS", "200")
    start = time.monotonic()
    result = CliRunner().invoke(app, ["nsys", "--import", str(export), "--json", str(tmp_path / "s.json")])
    assert time.monotonic() - start < 20
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    assert hashlib.sha256(export.read_bytes()).hexdigest() == digest
    shown = " ".join(result.stdout.split())
    assert "impossible in the export, left out (not a measurement)" in shown and name in shown and why in shown
    (summary,) = _strict_json((tmp_path / "s.json").read_text())["summaries"]
    assert any(name in note and why in note for note in summary["notes"])
    span_ns = 944252972 - 342588446  # the capture's start and stop (ANALYSIS_DETAILS)
    for kernel in summary["kernels"] or []:
        assert 0 < kernel["min_ns"] and kernel["total_ns"] <= span_ns


# ---------------------------------------------------------------- impossible values in `nsys stats` tables

STATS = (TOOLS / "nsys_2025.3.1_stats_csv_8_reports_stdout.txt").read_text()


def _stats_with(line_start: str, column: int, value: str) -> str:
    """The recorded `nsys stats` output with one cell of the first row starting with line_start set to value."""
    lines = STATS.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith(line_start))
    cells = next(csv.reader([lines[k]]))
    cells[column] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(cells)
    lines[k] = out.getvalue()
    return "\n".join(lines) + "\n"


IMPOSSIBLE_STATS = {  # (the row, its column, the value, the name the note gives)
    "kernel-negative-total": ("28.2,78977", 1, "-25760", "fma_fp32(float *, int, int): total time = -25760"),
    "kernel-nan-total": ("28.2,78977", 1, "nan", "fma_fp32(float *, int, int): total time = nan"),
    "kernel-inf-average": ("28.2,78977", 3, "inf", "fma_fp32(float *, int, int): avg = inf"),
    "kernel-negative-instances": ("28.2,78977", 2, "-1", "fma_fp32(float *, int, int): instances = -1"),
    "kernel-negative-share": ("28.2,78977", 0, "-28.2", "fma_fp32(float *, int, int): time = -28.2"),
    "kernel-negative-min": ("28.2,78977", 5, "-78977", "fma_fp32(float *, int, int): min = -78977"),
}


@pytest.mark.parametrize("case", list(IMPOSSIBLE_STATS))
def test_an_impossible_value_in_nsys_stats_is_named_and_left_out(tmp_path, monkeypatch, case):
    from tests.nsys_fakes import FakeNsys

    row, column, value, named = IMPOSSIBLE_STATS[case]
    monkeypatch.setattr(_proc, "run", FakeNsys(stats=_stats_with(row, column, value)))
    nsys = _write(tmp_path / "bin", "nsys", b"#!/bin/sh\n")
    nsys.chmod(0o755)
    report = _write(tmp_path, "r.nsys-rep", b"recorded elsewhere")
    before = _hashes(tmp_path)
    start = time.monotonic()
    result = CliRunner().invoke(app, ["nsys", "--import", str(report), "--nsys", str(nsys), "--out",
                                      str(tmp_path / "o"), "--json", str(tmp_path / "s.json")], env={"COLUMNS": "200"})
    assert time.monotonic() - start < 20
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    assert "Traceback" not in result.stdout
    assert all(_hashes(tmp_path).get(path) == digest for path, digest in before.items())
    shown = " ".join(result.stdout.split())
    assert f"impossible in the report, left out (not a measurement): cuda_gpu_kern_sum: {named}" in shown
    (summary,) = _strict_json((tmp_path / "s.json").read_text())["summaries"]
    assert any(named in note for note in summary["notes"])
    assert not any(k["name"].startswith("fma_fp32") for k in summary["kernels"])
    assert all(k["total_ns"] >= 0 and k["min_ns"] >= 0 for k in summary["kernels"])


# ---------------------------------------------------------------- a large export is read in bounded time


def test_an_export_of_60000_distinct_kernels_is_summarized_within_its_bound(tmp_path, monkeypatch):
    """Two steps were quadratic: the idle-time gaps (each scanned every later operation) and the
    short names (each compared with every other): 300,000 kernels took hours. Now linear or n log n."""
    export = tmp_path / "big.sqlite"
    export.write_bytes(SQLITE.read_bytes())
    count = 60_000
    with closing(sqlite3.connect(export)) as db:
        db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                   "INSERT INTO StringIds SELECT 1000000 + i, 'sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tile' || i "
                   "|| '(float *)' FROM n", (count,))
        db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                   "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, "
                   "demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
                   "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) "
                   "SELECT 440848594 + i * 10, 440848594 + i * 10 + 5, 0, 1, 7, 100000 + i, 1000000 + i, 1000000 + i, "
                   "16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, i FROM n", (count,))
        db.commit()
    monkeypatch.setenv("COLUMNS", "200")
    start = time.monotonic()
    result = CliRunner().invoke(app, ["nsys", "--import", str(export), "--json", str(tmp_path / "s.json")])
    assert time.monotonic() - start < 90  # it was hours
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    assert f"the 200 largest of {count + 7:,} rows (all of them: --json)" in " ".join(result.stdout.split())
    (summary,) = _strict_json((tmp_path / "s.json").read_text())["summaries"]
    assert len(summary["kernels"]) == count + 7


def test_names_past_the_rivals_limit_stay_whole_and_unique():
    from gpuprof.render.kernel_names import MAX_RIVALS, short_names

    crowd = [f"sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tile{i}(float *)" for i in range(MAX_RIVALS + 5)]
    names = short_names(crowd)
    assert len(set(names.values())) == len(crowd)
    assert names[crowd[0]] == "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tile0"
    few = short_names(crowd[:3])
    assert few[crowd[0]] == "sm80_xmma_gemm_f32f32_f32f32_f32…tile0"
    same = short_names([f"void k<{i}>(float *)" for i in range(MAX_RIVALS + 5)])
    assert len(set(same.values())) == MAX_RIVALS + 5 and "k#2" in same.values()
