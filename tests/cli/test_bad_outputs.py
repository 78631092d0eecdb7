"""Issue 37, the output rule: every file gpuprof writes (JSON, Markdown, HTML, PNG charts and plots)
is decided by what its path is, and every ordinary OS error on the way is one line.

Each case gives one output option a hostile path (a link to a user's file or to gpuprof's own, a
dangling link, a link loop, a user's file of any kind, another tool's JSON list, a folder, a FIFO, a
socket, a 256-byte name, a missing, read-only or looping folder) and asserts: the exit code, at most
one stderr line, no traceback, every file in the test's folder byte-identical (nothing replaced,
nothing new), and a time bound. Merge's shard records and a closed stdout are here too. All
in-process (CliRunner) except the closed-stream cases, which need a real child process.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuprof import files
from gpuprof.cli import app

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
RESULTS = FIXTURES / "results" / "smoke_a.json"
SQLITE = FIXTURES / "tools" / "nsys_2025.3.2_export_small.sqlite"
SECONDS = 20.0  # any one command here, refusal or not, on a slow shared core
USER_TEXT = b"# my notes\nnothing of gpuprof's\n"
PNG_USER = b"\x89PNG\r\n\x1a\n" + bytes(64)


# ---------------------------------------------------------------- helpers

def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root, not following links: a file's bytes and mode, a link's target, a
    special file's kind."""
    seen: dict[str, tuple] = {}
    for folder, dirs, names in os.walk(root, followlinks=False):
        for name in dirs + names:
            path = Path(folder) / name
            info = os.lstat(path)
            key = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                seen[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                seen[key] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
            else:
                seen[key] = ("other", stat.S_IFMT(info.st_mode))
    return seen


def _invoke(runner, argv: list[str]):
    began = time.monotonic()
    result = runner.invoke(app, argv)
    elapsed = time.monotonic() - began
    assert elapsed < SECONDS, f"{argv} took {elapsed:.1f} s"
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def _one_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) <= 1, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    return lines[0] if lines else ""


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    """The inputs a command may read: two results files and two shards of one suite run."""
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_bytes(RESULTS.read_bytes())
    new.write_bytes(RESULTS.read_bytes())
    first, second = _shards(tmp_path, {"index": 1, "count": 2}, {"index": 2, "count": 2})
    return {"base": base, "new": new, "s1": first, "s2": second}


def _shards(tmp_path: Path, one: dict | None, two: dict | None) -> tuple[Path, Path]:
    data = json.loads(RESULTS.read_text())
    rows = data["rows"]
    order = {row["id"]: n for n, row in enumerate(rows)} if "id" in rows[0] else {}
    out = []
    for name, part, record in (("s1.json", rows[:3], one), ("s2.json", rows[3:], two)):
        doc = dict(data, rows=part)
        if record is not None:
            doc["shard"] = {"units": 6, "order": {k: v for k, v in order.items()
                                                   if any(r.get("id") == k for r in part)}, **record}
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        out.append(path)
    return out[0], out[1]


# ---------------------------------------------------------------- output options x hostile paths

# Each command with one output option; {out} is the hostile path, the rest are the inputs above.
COMMANDS: dict[str, tuple[list[str], str]] = {
    "list --json": (["list", "vecadd", "--json", "{out}"], "json"),
    "compare --json": (["compare", "{base}", "{new}", "--json", "{out}"], "json"),
    "compare --markdown": (["compare", "{base}", "{new}", "--markdown", "{out}"], "md"),
    "compare --export-gab": (["compare", "{base}", "{new}", "--export-gab", "{out}"], "json"),
    "report --html": (["report", "{new}", "--html", "{out}"], "html"),
    "merge --json": (["merge", "{s1}", "{s2}", "--json", "{out}"], "json"),
    "doctor --json": (["doctor", "--json", "{out}"], "json"),
    "ncu --plot": (["ncu", "--import", "{new}", "--plot", "{out}"], "png"),
}


def _user(data: bytes) -> Callable[[Path, str], Path]:
    def make(tmp: Path, name: str) -> Path:
        path = tmp / name
        path.write_bytes(data)
        return path
    return make


def _link_to(target: str, content: bytes | None) -> Callable[[Path, str], Path]:
    def make(tmp: Path, name: str) -> Path:
        if content is not None:
            (tmp / target).write_bytes(content)
        link = tmp / name
        link.symlink_to(target)
        return link
    return make


def _loop(tmp: Path, name: str) -> Path:
    (tmp / "loop_b").symlink_to(name)
    (tmp / name).symlink_to("loop_b")
    return tmp / name


def _self_loop(tmp: Path, name: str) -> Path:
    (tmp / name).symlink_to(name)
    return tmp / name


def _folder(tmp: Path, name: str) -> Path:
    (tmp / name).mkdir()
    (tmp / name / "kept.txt").write_bytes(USER_TEXT)
    return tmp / name


def _socket(tmp: Path, name: str) -> Path:
    sock = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(tmp)  # a relative bind: a pytest folder's full path can pass the 108-byte socket limit
    try:
        sock.bind(name)
    finally:
        os.chdir(here)
    _SOCKETS.append(sock)
    return tmp / name


_SOCKETS: list[socket.socket] = []


def _long_name(tmp: Path, name: str) -> Path:
    return tmp / ("x" * (256 - len(name)) + name)


def _missing_folder(tmp: Path, name: str) -> Path:
    return tmp / "no_such_folder" / name


def _parent_is_file(tmp: Path, name: str) -> Path:
    (tmp / "a_file").write_bytes(USER_TEXT)
    return tmp / "a_file" / name


def _parent_loop(tmp: Path, name: str) -> Path:
    (tmp / "dir_loop").symlink_to("dir_loop")
    return tmp / "dir_loop" / name


OWN_JSON = b'{"schema": "gpuprof.list", "families": []}\n'
GAB_OTHER = json.dumps([{"name": "vecadd/grid/1024", "unit": "us", "value": 1.5},
                        {"name": "my bench", "unit": "ms", "value": 3}]).encode()
GAB_ROW_IDS = json.dumps([{"name": "vecadd/grid/1024", "unit": "us", "value": 1.5, "extra": "mine"}]).encode()

# kind -> (maker, the words the one line holds)
KINDS: dict[str, tuple[Callable[[Path, str], Path], str | tuple[str, ...]]] = {
    "link to a user's file": (_link_to("notes.md", USER_TEXT), "symbolic link"),
    "link to gpuprof's own file": (_link_to("own.json", OWN_JSON), "symbolic link"),
    "link to a user's folder": (_link_to("somewhere", None), ("symbolic link", "is a directory")),
    "dangling link": (_link_to("nothing_here", None), "symbolic link to nothing"),
    "link loop": (_loop, "symbolic link in a loop"),
    "self link": (_self_loop, "symbolic link in a loop"),
    "user text file": (_user(USER_TEXT), "not written by gpuprof"),
    "user empty JSON list": (_user(b"[]\n"), "not written by gpuprof"),
    "other tool's benchmark list": (_user(GAB_OTHER), "not written by gpuprof"),
    "benchmark list with row ids": (_user(GAB_ROW_IDS), "not written by gpuprof"),
    "user JSON object": (_user(b'{"schema": "mine", "tool": "gpuprof"}'), "not written by gpuprof"),
    "user PNG": (_user(PNG_USER), "not written by gpuprof"),
    "user HTML": (_user(b"<!DOCTYPE html><html><head><title>gpuprof</title></head></html>"), "not written by gpuprof"),
    "folder": (_folder, ("is a folder", "is a directory")),
    "socket": (_socket, "is a socket"),
    "256-byte name": (_long_name, "file name too long"),
    "missing folder": (_missing_folder, "does not exist"),
    "parent is a file": (_parent_is_file, "not a folder"),
    "parent is a link loop": (_parent_loop, "loop"),
}


@pytest.fixture(autouse=True)
def _close_sockets():
    yield
    while _SOCKETS:
        _SOCKETS.pop().close()


def _argv(command: str, out: Path, paths: dict[str, Path]) -> list[str]:
    words, _ = COMMANDS[command]
    return [w.format(out=out, **paths) for w in words]


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_hostile_output_path_is_one_line_exit_2_and_nothing_changes(runner, tmp_path, inputs, command, kind):
    make, words = KINDS[kind]
    (tmp_path / "somewhere").mkdir(exist_ok=True)
    out = make(tmp_path, f"out.{COMMANDS[command][1]}")
    before = _snapshot(tmp_path)
    result = _invoke(runner, _argv(command, out, inputs))
    line = _one_line(result)
    assert result.exit_code == 2, (result.exit_code, line)
    assert line.startswith("error:") and any(w in line.lower() for w in (words if isinstance(words, tuple)
                                                                          else (words,))), line
    assert out.name[:30] in line or str(out.parent.name) in line, line
    assert _snapshot(tmp_path) == before  # nothing replaced, nothing written through, nothing new


@pytest.mark.parametrize("command", ["list --json", "compare --json", "compare --markdown", "report --html",
                                     "merge --json", "doctor --json", "ncu --plot", "compare --export-gab"])
def test_a_read_only_folder_is_one_line_exit_2(runner, tmp_path, inputs, monkeypatch, command):
    folder = tmp_path / "locked"
    folder.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == folder and mode & os.W_OK
                        else real(p, mode, **kw))  # tests run as root, whom a 0555 folder does not stop
    before = _snapshot(tmp_path)
    result = _invoke(runner, _argv(command, folder / f"out.{COMMANDS[command][1]}", inputs))
    line = _one_line(result)
    assert result.exit_code == 2 and "not writable" in line, line
    assert _snapshot(tmp_path) == before


# The writer itself meets the OS: errno -> exit code (a full disk is the machine's, 3; the rest the path's, 2).
OS_ERRORS = {
    "full disk": (errno.ENOSPC, 3, "no space left on device"),
    "quota": (errno.EDQUOT, 3, "no space left on device"),
    "read-only file system": (errno.EROFS, 2, "read-only file system"),
    "permission": (errno.EACCES, 2, "permission denied"),
    "name too long": (errno.ENAMETOOLONG, 2, "file name too long"),
}


@pytest.mark.parametrize("where", ["mkstemp", "fsync", "replace"])
@pytest.mark.parametrize("error", list(OS_ERRORS))
@pytest.mark.parametrize("command", ["list --json", "compare --markdown", "merge --json"])
def test_an_os_error_while_writing_is_one_line_with_its_exit_code(runner, tmp_path, inputs, monkeypatch,
                                                                  command, error, where):
    number, code, words = OS_ERRORS[error]

    def fail(*args, **kwargs):
        raise OSError(number, os.strerror(number))

    target = {"mkstemp": (files.tempfile, "mkstemp"), "fsync": (files.os, "fsync"),
              "replace": (files.os, "replace")}[where]
    monkeypatch.setattr(*target, fail)
    own = tmp_path / f"out.{COMMANDS[command][1]}"
    before = _snapshot(tmp_path)
    result = _invoke(runner, _argv(command, own, inputs))
    monkeypatch.undo()
    line = _one_line(result)
    assert result.exit_code == code and words in line.lower(), line
    assert _snapshot(tmp_path) == before  # no temporary file left behind


# ---------------------------------------------------------------- what the rule allows

@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o664])
@pytest.mark.parametrize("command", ["list --json", "compare --json", "compare --markdown", "compare --export-gab"])
def test_gpuprofs_own_file_is_replaced_and_keeps_its_mode(runner, tmp_path, inputs, command, mode):
    out = tmp_path / f"out.{COMMANDS[command][1]}"
    assert _invoke(runner, _argv(command, out, inputs)).exit_code == 0
    out.chmod(mode)
    inode = out.stat().st_ino
    result = _invoke(runner, _argv(command, out, inputs))
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(out.stat().st_mode) == mode and files.is_own(out)
    assert out.stat().st_ino != inode  # replaced by a rename, not written in place
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".gpuprof.")]


@pytest.mark.parametrize("kind", ["user text file", "user empty JSON list", "other tool's benchmark list",
                                  "user JSON object"])
def test_force_replaces_a_users_file_keeping_its_mode(runner, tmp_path, kind):
    out = KINDS[kind][0](tmp_path, "out.json")
    out.chmod(0o600)
    result = _invoke(runner, ["list", "vecadd", "--json", str(out), "--force"])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["schema"] == "gpuprof.list" and stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.parametrize("kind", ["link to a user's file", "link to gpuprof's own file", "dangling link",
                                  "link loop", "socket", "folder"])
def test_force_never_writes_through_a_link_or_onto_a_special_file(runner, tmp_path, kind):
    (tmp_path / "somewhere").mkdir()
    out = KINDS[kind][0](tmp_path, "out.json")
    before = _snapshot(tmp_path)
    result = _invoke(runner, ["list", "vecadd", "--json", str(out), "--force"])
    assert result.exit_code == 2 and _one_line(result).startswith("error:")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("data", [b"[]", b"[]\n", b"[{}]", GAB_OTHER, GAB_ROW_IDS,
                                  b'[{"name": "a/b/1", "unit": "us", "value": 1, "extra": "x"}]',
                                  b'[{"name": "a/b/1", "unit": "us", "value": 1, "extra": "x (gpuprof)", "k": 1}]'])
def test_a_json_list_of_another_tool_is_a_users_file(tmp_path, data):
    path = tmp_path / "bench.json"
    path.write_bytes(data)
    assert not files.is_own(path)


def test_gpuprofs_own_benchmark_list_is_known_again(tmp_path):
    path = tmp_path / "bench.json"
    path.write_bytes(b'[{"name": "a/b/1", "unit": "us", "value": 1, "extra": "SAME (ok) vs base (gpuprof)"}]')
    assert files.is_own(path)


@pytest.mark.parametrize("device", ["/dev/null", "/dev/stdout"])
def test_a_link_to_a_stream_is_written_into(runner, tmp_path, device):
    link = tmp_path / "sink"
    link.symlink_to(device)
    result = _invoke(runner, ["list", "vecadd", "--json", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink()


@pytest.mark.parametrize("command", ["list --json", "compare --json", "merge --json"])
def test_a_fifo_nobody_reads_is_one_line_not_a_hang(runner, tmp_path, inputs, command):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    result = _invoke(runner, _argv(command, fifo, inputs))
    line = _one_line(result)
    assert result.exit_code == 2 and "no process reads" in line, line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---------------------------------------------------------------- report --png DIR

CHARTS = ["vecadd_roofline.png", "matmul_roofline.png", "vecadd_67108864_ladder.png",
          "matmul_2048x2048x2048_ladder.png"]
IN_DIR: dict[str, Callable[[Path, str], Path]] = {
    "link to a user's file": _link_to("../notes.md", None),
    "dangling link": _link_to("../nothing_here", None),
    "link loop": _loop,
    "user PNG": _user(PNG_USER),
    "user text": _user(USER_TEXT),
    "folder": _folder,
}


@pytest.mark.parametrize("chart", CHARTS)
@pytest.mark.parametrize("kind", list(IN_DIR))
def test_report_png_never_replaces_or_writes_through_what_is_in_the_folder(runner, tmp_path, kind, chart):
    (tmp_path / "notes.md").write_bytes(USER_TEXT)
    charts = tmp_path / "charts"
    charts.mkdir()
    IN_DIR[kind](charts, chart)
    before = _snapshot(tmp_path)
    result = _invoke(runner, ["report", str(RESULTS), "--png", str(charts)])
    line = _one_line(result)
    assert result.exit_code == 2 and chart in line, line
    assert _snapshot(tmp_path) == before  # checked before the first chart is drawn: no chart written


@pytest.mark.parametrize("kind", ["user text file", "dangling link", "link loop", "socket", "256-byte name",
                                  "missing folder", "parent is a file"])
def test_report_png_dir_itself_is_checked(runner, tmp_path, kind):
    (tmp_path / "somewhere").mkdir()
    target = KINDS[kind][0](tmp_path, "charts")
    before = _snapshot(tmp_path)
    result = _invoke(runner, ["report", str(RESULTS), "--png", str(target)])
    assert result.exit_code == 2 and _one_line(result).startswith("error:")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize(("names", "distinct"), [
    (["a b", "a_b"], 2), (["A", "a"], 2), (["x/y", "x_y", "x y"], 3), (["matmul", "vecadd"], 2),
    (["é", "ü"], 2), (["..", "__"], 2), (["f", "f "], 2), (["-", "_"], 2),
])
def test_chart_names_are_unique_per_family(names, distinct):
    from gpuprof.render.report_html import unique_slugs

    slugs = unique_slugs(names)
    assert len({s.lower() for s in slugs.values()}) == distinct
    assert all("/" not in s and s for s in slugs.values())  # a chart's file name is stem + "_roofline.png"


# ---------------------------------------------------------------- merge's shard record

BAD_SHARDS = {
    "count huge": {"index": 1, "count": 1_000_000_000_000},
    "count zero": {"index": 1, "count": 0},
    "count negative": {"index": 1, "count": -2},
    "count fraction": {"index": 1, "count": 2.5},
    "count text": {"index": 1, "count": "2"},
    "count true": {"index": 1, "count": True},
    "count null": {"index": 1, "count": None},
    "count list": {"index": 1, "count": [2]},
    "index list": {"index": [1], "count": 2},
    "index zero": {"index": 0, "count": 2},
    "index past count": {"index": 3, "count": 2},
    "index negative": {"index": -1, "count": 2},
    "index fraction": {"index": 1.5, "count": 2},
    "index object": {"index": {"k": 1}, "count": 2},
    "index missing": {"count": 2},
    "units zero": {"index": 1, "count": 2, "units": 0},
    "units huge": {"index": 1, "count": 2, "units": 10 ** 12},
    "units text": {"index": 1, "count": 2, "units": "6"},
    "order a list": {"index": 1, "count": 2, "order": [1, 2]},
    "order places text": {"index": 1, "count": 2, "order": {"vecadd/grid/1": "1"}},
    "order place negative": {"index": 1, "count": 2, "order": {"vecadd/grid/1": -1}},
    "order place huge": {"index": 1, "count": 2, "order": {"vecadd/grid/1": 10 ** 30}},
    "merged not a list": {"merged": "x"},
    "merged of numbers": {"merged": [1, 2]},
    "record a list": [1, 2],
    "record a number": 7,
}


@pytest.mark.parametrize("which", ["first", "second"])
@pytest.mark.parametrize("bad", list(BAD_SHARDS))
def test_a_bad_shard_record_is_one_line_exit_2_without_waiting(runner, tmp_path, bad, which):
    good = {"index": 1 if which == "second" else 2, "count": 2}
    one, two = (BAD_SHARDS[bad], good) if which == "first" else (good, BAD_SHARDS[bad])
    first, second = _shards(tmp_path, None, None)
    for path, record in ((first, one), (second, two)):
        doc = json.loads(path.read_text())
        doc["shard"] = record
        path.write_text(json.dumps(doc))
    before = _snapshot(tmp_path)
    result = _invoke(runner, ["merge", str(first), str(second), "--json", str(tmp_path / "m.json")])
    line = _one_line(result)
    assert result.exit_code == 2 and '"shard"' in line and "malformed" in line, line
    assert _snapshot(tmp_path) == before


def test_a_missing_shard_among_many_is_named_briefly(runner, tmp_path):
    first, second = _shards(tmp_path, {"index": 1, "count": 10_000, "units": 10_000},
                            {"index": 2, "count": 10_000, "units": 10_000})
    result = _invoke(runner, ["merge", str(first), str(second), "--json", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    assert "and 9,988 more" in result.stderr and len(result.stderr) < 2000


@pytest.mark.parametrize("shard", ["1/99999999999999999999", "99999999999999999999/1", "1/10001",
                                   "1/0", "0/4", "5/4", "-1/4", "1/-4", "1.5/4", "a/b", "1/4/2", ""])
def test_suite_shard_out_of_range_is_one_line_exit_2(runner, tmp_path, shard):
    from gpuprof.commands.suite_shard import parse_shard
    from gpuprof.errors import UsageError

    began = time.monotonic()
    with pytest.raises(UsageError):
        parse_shard(shard)
    assert time.monotonic() - began < 1


# ---------------------------------------------------------------- closed streams (a real child)

def _child(argv: list[str], **redirect) -> subprocess.CompletedProcess:
    code = ("import os, sys; fds = [int(f) for f in sys.argv[1].split(',') if f]; [os.close(f) for f in fds]; "
            "os.execv(sys.executable, [sys.executable, '-m', 'gpuprof', *sys.argv[2:]])")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "160"}, check=False, **redirect)


@pytest.mark.parametrize("argv", [["doctor"], ["list"], ["list", "vecadd", "--json", "-"], ["show", str(RESULTS)]])
def test_a_closed_stdout_is_one_line_exit_3(argv):
    done = _child(["1", *argv])
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "stdout is closed" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("closed", ["0", "2", "0,2"])
def test_a_closed_stdin_or_stderr_changes_nothing(closed):
    done = _child([closed, "list", "vecadd"])
    assert done.returncode == 0 and "vecadd" in done.stdout and "Traceback" not in done.stderr


# ---------------------------------------------------------------- impossible rows of an import

@pytest.mark.parametrize("rows", ["one kernel", "every kernel"])
def test_negative_kernel_durations_are_flagged_not_shown(tmp_path, rows):
    import sqlite3
    from contextlib import closing

    from gpuprof.commands.nsys_summaries import sqlite_summary

    copy = tmp_path / "bad.sqlite"
    copy.write_bytes(SQLITE.read_bytes())
    where = "WHERE rowid = (SELECT MIN(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)" if rows == "one kernel" else ""
    with closing(sqlite3.connect(copy)) as db:
        db.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 1000000000 {where}")
        db.commit()
    summary = sqlite_summary(copy)
    assert any("end before they start" in note and "left out" in note and "vecAdd" in note for note in summary.notes)
    assert all(k.total_ns >= 0 for k in summary.kernels or ())


@pytest.mark.parametrize(("one", "two", "missing"), [
    ({"index": 1, "count": 2}, {"index": 2, "count": 2}, None),
    ({"index": 2, "count": 2, "units": 6}, {"index": 1, "count": 2, "units": 6}, None),
    ({"index": 1, "count": 10, "units": 6}, {"index": 2, "count": 10, "units": 6}, "3, 4, 5, 6, 7, 8, 9, 10 of 10"),
    ({"index": 1, "count": 3}, {"index": 3, "count": 3}, "shard 2 of 3"),
])
def test_a_good_shard_record_merges(runner, tmp_path, one, two, missing):
    first, second = _shards(tmp_path, one, two)
    result = _invoke(runner, ["merge", str(first), str(second), "--json", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    assert (missing is None) == ("not given" not in result.stderr) and (missing or "") in result.stderr
    assert len(json.loads((tmp_path / "m.json").read_text())["rows"]) == 6


@pytest.mark.parametrize("where", ["DIR itself", "a new DIR's parent"])
def test_report_png_into_a_read_only_folder_is_one_line_exit_2(runner, tmp_path, monkeypatch, where):
    folder = tmp_path / "locked"
    folder.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == folder and mode & os.W_OK
                        else real(p, mode, **kw))
    target = folder if where == "DIR itself" else folder / "charts"
    before = _snapshot(tmp_path)
    result = _invoke(runner, ["report", str(RESULTS), "--png", str(target)])
    assert result.exit_code == 2 and "not writable" in _one_line(result)
    assert _snapshot(tmp_path) == before


def _renamed(tmp_path: Path, names: dict[str, str]) -> Path:
    """The user-family fixture with its two families renamed (their file-safe names then collide)."""
    data = json.loads((FIXTURES / "results" / "h100_user_family.json").read_text())
    data["families"]["by_name"] = {names[k]: v for k, v in data["families"]["by_name"].items()}
    for row in data["rows"]:
        row["family"] = names[row["family"]]
        if "id" in row:
            row["id"] = "/".join([row["family"], *row["id"].split("/")[1:]])
    path = tmp_path / "two.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("names", [{"gelu": "my fam", "poly": "my_fam"}, {"gelu": "Fam", "poly": "fam"},
                                   {"gelu": "g" * 300, "poly": "g" * 299 + "h"}])
def test_two_families_whose_names_collide_get_their_own_charts(runner, tmp_path, names):
    pytest.importorskip("matplotlib")
    results_file = _renamed(tmp_path, names)
    charts = tmp_path / "charts"
    result = _invoke(runner, ["report", str(results_file), "--png", str(charts)])
    assert result.exit_code == 0, result.output
    made = sorted(p.name for p in charts.iterdir())
    assert len([n for n in made if n.endswith("_roofline.png")]) == 2, made
    assert len({n.lower() for n in made}) == len(made) and all(files.is_own(charts / n) for n in made)
    assert all(len(n.encode()) <= 255 for n in made)
    again = _invoke(runner, ["report", str(results_file), "--png", str(charts)])  # its own charts: replaced
    assert again.exit_code == 0 and sorted(p.name for p in charts.iterdir()) == made


@pytest.mark.parametrize(("number", "named", "code"), [
    (errno.EACCES, True, 2), (errno.EROFS, True, 2), (errno.ELOOP, True, 2), (errno.ENAMETOOLONG, True, 2),
    (errno.EIO, True, 3), (errno.EMFILE, True, 3), (errno.ENOSPC, True, 3),
    (errno.EIO, False, 3), (errno.EMFILE, False, 3),
])
def test_an_os_error_reaching_the_boundary_is_one_line(runner, tmp_path, monkeypatch, number, named, code):
    def fail(path, *args, **kwargs):
        raise OSError(number, os.strerror(number), *([str(path)] if named else []))

    monkeypatch.setattr(files, "atomic_write_text", fail)
    result = _invoke(runner, ["list", "vecadd", "--json", str(tmp_path / "out.json")])
    line = _one_line(result)
    assert result.exit_code == code and line.startswith("error:") and os.strerror(number).lower() in line.lower()
