"""Hostile inputs of the kinds issue 37's trial found (names that a shell would run, special files
as includes, sources nvcc or NVRTC read oddly, an unusable TMPDIR, text that drives the terminal).

Each CLI case asserts the exit code, at most one stderr line ('error: ...' when it fails), no
traceback, no marker file (a name runs `cd; touch PWNED`: HOME, the working folder and the file's
folder are checked), the inputs byte-identical, and a time bound. Most cases run in-process
(CliRunner) against a stand-in nvcc (a /bin/sh script) that logs the arguments it was given: each
must be a name gpuprof chose (no character a shell reads). A handful run the real nvcc and NVRTC.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import tempfile
import time
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.cli import kernels as cli_kernels
from gpuprof.render.compare_view import _md
from gpuprof.render.fit import Column, fitted_table, print_table
from gpuprof.render.safe_text import visible
from gpuprof.tools import nvcc

REPO = Path(__file__).resolve().parents[2]
VECADD = (REPO / "kernels" / "vecadd" / "grid.cu").read_bytes()
KERNEL = b'extern "C" __global__ void k(float* out, int n) { if (n) out[0] = 1.0f; }\n'
SECONDS = 20.0  # every in-process case ends well within this (the stand-in nvcc answers at once)
PLAIN_ARG = re.compile(r"[A-Za-z0-9_.+/=,-]+")
MARKER = "PWNED"

# File and folder names that run `cd; touch PWNED` where a shell reads them, or read as options.
HOSTILE_NAMES = {
    "dollar": f"$(cd;touch {MARKER})",
    "backtick": f"`cd;touch {MARKER}`",
    "semicolon": f"a;cd;touch {MARKER};b",
    "newline": f"a\ncd\ntouch {MARKER}\nb",
    "and": f"a&&cd&&touch {MARKER}",
    "pipe": f"a|cd|touch {MARKER}",
    "redirect": f"a>{MARKER}",
    "dash": "-dash",
    "double-dash": "--help",
    "space": "two words",
    "quote": "it's",
    "dquote": 'say "hi"',
    "glob": "a*?[x]",
    "var": "$HOME",
    "tilde": "~root",
    "backslash": "a\\b",
    "bidi": "abc\u202eexe.",
    "esc": "e\x1b[2Jx",
    "markup": "[bold]x[red]",
    "cr": "a\rb",
}

FAKE_NVCC = r"""#!/bin/sh
for a in "$@"; do printf '%s\0' "$a" >> "$FAKE_NVCC_LOG"; done
case "$1" in
  --list-gpu-code) echo sm_90; exit 0;;
  --list-gpu-arch) echo compute_90; exit 0;;
  --version) echo "fake nvcc"; exit 0;;
esac
for last; do :; done
if [ -n "$FAKE_NVCC_SLEEP" ]; then sleep "$FAKE_NVCC_SLEEP"; fi
if [ -n "$FAKE_NVCC_STDERR" ]; then printf '%s\n' "$FAKE_NVCC_STDERR" | sed "s|@SRC@|$last|" >&2; exit 1; fi
if grep -rqs __global__ "$(dirname "$last")"; then
  echo "ptxas info    : Compiling entry function 'k' for 'sm_90'" >&2
  echo "ptxas info    : Used 8 registers, used 0 barriers" >&2
fi
exit 0
"""


# ---------------------------------------------------------------- plumbing


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home, a working folder and a stand-in nvcc first on PATH; returns the working folder."""
    home, work, tools = tmp_path / "home", tmp_path / "work", tmp_path / "tools"
    for folder in (home, work, tools):
        folder.mkdir()
    fake = tools / "nvcc"
    fake.write_text(FAKE_NVCC)
    fake.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NVCC_LOG", str(tmp_path / "nvcc.log"))
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.chdir(work)
    return work


def _hashes(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if stat.S_ISREG(info.st_mode):
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[str(path)] = f"mode {stat.S_IFMT(info.st_mode)}"
    return out


def _no_marker(work: Path, *more: Path) -> None:
    home = Path(os.environ["HOME"])
    for folder in (home, work, work.parent, *more):
        assert not (folder / MARKER).exists(), f"a name was run as a command: {folder / MARKER}"


def _nvcc_args(work: Path) -> list[str]:
    log = work.parent / "nvcc.log"
    return [a for a in log.read_text(errors="replace").split("\0") if a] if log.exists() else []


def invoke(work: Path, argv: list[str], code: int, bound: float = SECONDS) -> str:
    """Run `gpuprof argv` in-process; assert the code, one line at most on stderr, no traceback,
    no marker, inputs unchanged, within `bound` seconds; the stderr text."""
    before = _hashes(work)
    start = time.monotonic()
    result = CliRunner().invoke(app, argv)
    took = time.monotonic() - start
    err = result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in err and "Traceback" not in result.stdout
    assert result.exit_code == code, (result.exit_code, err, result.stdout[-500:])
    assert len(err.splitlines()) <= 1, err
    if code:
        assert err.startswith("error: "), err
    _no_marker(work)
    assert _hashes(work) == before, "an input changed"
    assert took < bound, f"{took:.1f} s"
    for arg in _nvcc_args(work)[1:]:  # every argument nvcc got is a name gpuprof chose
        assert PLAIN_ARG.fullmatch(arg), f"nvcc got {arg!r}"
    return err


def _write(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- no shell where a path travels

NAME_IDS = list(HOSTILE_NAMES)


@pytest.mark.parametrize("where", ["file", "folder"])
@pytest.mark.parametrize("how", ["file", "function"])
@pytest.mark.parametrize("key", NAME_IDS)
def test_hostile_names_reach_nvcc_only_as_private_plain_names(place, key, where, how):
    name = HOSTILE_NAMES[key]
    folder = place / (name if where == "folder" else "src")
    source = _write(folder, f"{name}.cu" if where == "file" else "kernel.cu", KERNEL)
    spec = f"{source}:k" if how == "function" else str(source)
    invoke(place, ["build", "--add", spec], 0)
    args = _nvcc_args(place)
    assert args and not any(name in a for a in args if len(name) > 2)
    _no_marker(place, folder)


@pytest.mark.parametrize("key", NAME_IDS)
def test_a_hostile_include_folder_name_never_reaches_nvcc(place, key):
    shared = _write(place / HOSTILE_NAMES[key], "shared.cuh", b"#define SCALE 2\n")
    _write(shared.parent, "kernel.cu", b'#include "shared.cuh"\n' + KERNEL)
    invoke(place, ["build", "--add", str(shared.parent / "kernel.cu")], 0)


@pytest.mark.parametrize("key", ["dollar", "backtick", "semicolon", "newline", "dash", "space", "esc", "bidi"])
def test_new_refuses_a_hostile_variant_name_in_one_line(place, key):
    err = invoke(place, ["new", "vecadd", HOSTILE_NAMES[key]], 2)
    assert "\x1b" not in err and "\u202e" not in err
    assert list(place.iterdir()) == []


@pytest.mark.parametrize("key", ["dollar", "backtick", "semicolon", "newline", "space", "esc", "bidi", "markup"])
def test_new_writes_into_a_hostile_folder_name_as_data(place, key):
    folder = place / HOSTILE_NAMES[key]
    folder.mkdir()
    result = CliRunner().invoke(app, ["new", "vecadd", "mine", "--dir", str(folder)])
    assert result.exit_code == 0, result.stderr
    assert (folder / "mine.cu").is_file()
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout and "\r" not in result.stdout
    _no_marker(place, folder)


@pytest.mark.parametrize("name", [
    "k;int x", 'k"', "k\nint x", "k{}", "k<1>;", "k//", "k#x", "k`x`", "k$x", "k\\x", "k'a'",
])
def test_a_kernel_name_that_would_be_code_in_the_generated_file_is_refused(place, name):
    source = _write(place / "src", "kernel.cu", b"template <int N> __global__ void k(float* o) { o[0] = N; }\n")
    invoke(place, ["build", "--add", f"{source}:{name}"], 2)
    assert _nvcc_args(place) == [] or all("entries" not in a for a in _nvcc_args(place))


@pytest.mark.parametrize("define", ["X;touch PWNED=1", "$(touch PWNED)=1", "X=1;touch", "-X=1", "X Y=1"])
def test_a_define_that_is_not_name_equals_integer_is_refused(place, define):
    source = _write(place / "src", "kernel.cu", KERNEL)
    invoke(place, ["build", "--add", str(source), "-D", define], 2)


# ---------------------------------------------------------------- every compile bounded

SPECIAL = {
    "fifo": lambda folder: os.mkfifo(folder / "special.cuh"),
    "folder": lambda folder: (folder / "special.cuh").mkdir(),
    "link-to-dev-zero": lambda folder: (folder / "special.cuh").symlink_to("/dev/zero"),
    "link-to-fifo": lambda folder: (os.mkfifo(folder / "p"), (folder / "special.cuh").symlink_to(folder / "p")),
    "huge": lambda folder: (folder / "special.cuh").write_bytes(b"/" * 16 + b" " * (9 << 20)),
}
INCLUDES = {
    "quoted": '#include "special.cuh"\n',
    "spaced": '  #  include   "special.cuh"\n',
    "nested": '#include "outer.cuh"\n',
    "subfolder": '#include "sub/../special.cuh"\n',
}


@pytest.mark.parametrize("how", list(INCLUDES))
@pytest.mark.parametrize("kind", list(SPECIAL))
def test_an_include_of_a_special_or_huge_file_is_refused_before_nvcc(place, kind, how):
    folder = place / "src"
    folder.mkdir()
    (folder / "sub").mkdir()
    SPECIAL[kind](folder)
    _write(folder, "outer.cuh", b'#include "special.cuh"\n')
    source = _write(folder, "kernel.cu", INCLUDES[how].encode() + KERNEL)
    err = invoke(place, ["build", "--add", str(source)], 2, bound=10)
    assert "special.cuh" in err
    assert not [a for a in _nvcc_args(place) if a.endswith(".cu")], "nvcc ran"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/stdin", "/dev/urandom"])
@pytest.mark.parametrize("form", ['"{}"', "<{}>"])
def test_an_absolute_include_of_a_device_is_refused(place, device, form):
    source = _write(place / "src", "kernel.cu", f"#include {form.format(device)}\n".encode() + KERNEL)
    err = invoke(place, ["build", "--add", str(source)], 2, bound=10)
    assert device in err


@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link", "folder", "huge", "binary", "dangling", "loop"])
def test_a_special_or_huge_source_is_refused_in_one_line(place, kind):
    folder = place / "src"
    folder.mkdir()
    path = folder / "kernel.cu"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero-link":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge":
        path.write_bytes(KERNEL + b"//" + b"x" * (9 << 20))
    elif kind == "binary":
        path.write_bytes(b"\x00\x01" * 100)
    elif kind == "dangling":
        path.symlink_to(folder / "nowhere.cu")
    else:
        path.symlink_to(folder / "kernel.cu")
    invoke(place, ["build", "--add", str(path)], 2, bound=10)


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "soon"])
def test_compile_timeout_must_be_a_positive_finite_number(place, value):
    source = _write(place / "src", "kernel.cu", KERNEL)
    err = invoke(place, ["build", "--add", str(source), "--compile-timeout", value], 2)
    assert "--compile-timeout" in err


def test_a_compile_past_the_time_limit_ends_with_one_line(place, monkeypatch):
    monkeypatch.setenv("FAKE_NVCC_SLEEP", "30")
    source = _write(place / "src", "kernel.cu", KERNEL)
    err = invoke(place, ["build", "--add", str(source), "--compile-timeout", "0.5"], 2, bound=8)
    assert "did not finish within 0.5 s" in err and "--compile-timeout" in err


def test_the_cli_default_time_limit_is_the_compilers():
    assert cli_kernels.COMPILE_TIMEOUT_S == nvcc.COMPILE_TIMEOUT_S


# ---------------------------------------------------------------- blame by cause

ENVIRONMENT_OUTPUT = {
    "no-gcc": "gcc: No such file or directory\nnvcc fatal   : Failed to preprocess host compiler properties.",
    "sh-gcc": "sh: 1: gcc: not found",
    "full": "ptxas fatal   : could not write /tmp/x/tmpxft_0001: No space left on device",
    "read-only": "cicc: cannot create /tmp/tmpxft_00001.ptx: Read-only file system",
    "quota": "fatbinary: Disk quota exceeded",
    "tmp": "nvcc error   : Could not open tmpxft_0002.cpp: Permission denied",
}


@pytest.mark.parametrize("key", list(ENVIRONMENT_OUTPUT))
def test_a_machine_that_cannot_compile_is_exit_3_naming_the_cause(place, monkeypatch, key):
    monkeypatch.setenv("FAKE_NVCC_STDERR", ENVIRONMENT_OUTPUT[key])
    source = _write(place / "src", "kernel.cu", KERNEL)
    err = invoke(place, ["build", "--add", str(source)], 3)
    assert "nvcc cannot compile here" in err and "did not compile" not in err


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT])
def test_a_temporary_folder_that_cannot_be_made_is_exit_3(place, monkeypatch, code):
    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    source = _write(place / "src", "kernel.cu", KERNEL)
    err = invoke(place, ["build", "--add", str(source)], 3)
    assert "TMPDIR" in err


@pytest.mark.parametrize("tmpdir", ["$(touch PWNED)", "a b", "x;y"])
def test_a_temporary_folder_with_shell_characters_is_exit_3(place, monkeypatch, tmpdir):
    folder = place.parent / tmpdir
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    source = _write(place / "src", "kernel.cu", KERNEL)
    err = invoke(place, ["build", "--add", str(source)], 3)
    assert "TMPDIR" in err


def test_a_source_error_is_still_exit_2(place, monkeypatch):
    monkeypatch.setenv("FAKE_NVCC_STDERR", "@SRC@(3): error: expected a ';'")
    source = _write(place / "src", "kernel.cu", KERNEL)
    err = invoke(place, ["build", "--add", str(source)], 2)
    assert "kernel.cu" in err and "source.cu" not in err


# ---------------------------------------------------------------- odd sources and outputs


@pytest.mark.parametrize("form", ["bom", "cr", "crlf", "bom-cr", "mixed"])
def test_odd_line_ends_and_a_bom_build(place, form):
    text = KERNEL.replace(b"{", b"{\n", 1).replace(b"\n", b"\r" if "cr" in form else b"\n")
    if form == "crlf":
        text = KERNEL.replace(b"\n", b"\r\n")
    if form == "mixed":
        text = b"// one\r// two\r\n// three\n" + KERNEL
    if form.startswith("bom"):
        text = b"\xef\xbb\xbf" + text
    source = _write(place / "src", "kernel.cu", text)
    invoke(place, ["build", "--add", f"{source}:k"], 0)


@pytest.mark.parametrize("argv", [
    ["compare", "a.json", "b.json", "--markdown", "-"],
    ["compare", "a.json", "b.json", "--export-gab", "-"],
    ["report", "a.json", "--html", "-"],
    ["report", "a.json", "--png", "-"],
])
def test_dash_for_a_file_option_is_refused_never_a_file_named_dash(place, argv):
    err = invoke(place, argv, 2)
    assert "-" in err and not (place / "-").exists()


def test_empty_source_is_one_line(place):
    source = _write(place / "src", "kernel.cu", b"")
    invoke(place, ["build", "--add", str(source)], 2)


# ---------------------------------------------------------------- text from files is data

HOSTILE_TEXT = {
    "clear": "v\x1b[2Jx", "title": "v\x1b]0;owned\x07x", "cr": "v\rx", "bs": "v\bx", "bell": "v\x07x",
    "del": "v\x7fx", "c1-csi": "v\x9b2Jx", "nel": "v\x85x", "lre": "v\u202ax", "rle": "v\u202bx",
    "pdf": "v\u202cx", "lro": "v\u202dx", "rlo": "v\u202ex", "lri": "v\u2066x", "rli": "v\u2067x",
    "fsi": "v\u2068x", "pdi": "v\u2069x", "markup": "v[bold red]x[/]", "nul": "v\x00x", "vt": "v\x0bx",
}
UNSAFE_OUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _printed(table: Table, width: int) -> str:
    console = Console(width=width, record=True, force_terminal=False, file=open(os.devnull, "w"))  # noqa: SIM115
    print_table(console, table, wide=False)
    return console.export_text()


@pytest.mark.parametrize("width", [40, 100])
@pytest.mark.parametrize("key", list(HOSTILE_TEXT))
def test_tables_escape_control_and_bidi_characters(key, width):
    text = HOSTILE_TEXT[key]
    table = fitted_table([Column("variant", 0, "left"), Column("gpu", 0, "left")], [[text, Text(text)]], None,
                         title=text, caption=text)
    out = _printed(table, width)
    assert not UNSAFE_OUT.search(out), repr(out)
    if key == "markup":
        assert "[bold red]" in out
    else:  # a str cell shows the escape (Rich drops a few controls from a Text itself)
        assert visible(text) in out


@pytest.mark.parametrize("key", list(HOSTILE_TEXT))
def test_plain_rich_tables_printed_by_print_table_are_escaped_too(key):
    table = Table(title=HOSTILE_TEXT[key])
    table.add_column(HOSTILE_TEXT[key])
    table.add_row(HOSTILE_TEXT[key])
    assert not UNSAFE_OUT.search(_printed(table, 80))


@pytest.mark.parametrize("key", list(HOSTILE_TEXT))
def test_markdown_cells_escape_control_and_bidi_characters(key):
    cell = _md(HOSTILE_TEXT[key] + "|\nnext")
    assert not UNSAFE_OUT.search(cell) and "\n" not in cell and "\\|" in cell


@pytest.mark.parametrize("key", list(HOSTILE_TEXT))
def test_error_lines_escape_control_and_bidi_characters(place, key):
    err = invoke(place, ["list", HOSTILE_TEXT[key]], 2)
    assert not UNSAFE_OUT.search(err), repr(err)


@pytest.mark.parametrize("key", ["esc", "bidi", "markup", "cr"])
def test_a_hostile_file_name_prints_escaped_in_the_build_table(place, key):
    source = _write(place / "src", f"{HOSTILE_NAMES[key]}.cu", KERNEL)
    result = CliRunner().invoke(app, ["build", "--add", str(source)])
    assert result.exit_code == 0, result.stderr
    assert not UNSAFE_OUT.search(result.stdout), repr(result.stdout)
    if key == "markup":
        assert "[bold]x[red]" in result.stdout


# ---------------------------------------------------------------- the real nvcc and NVRTC (a handful)


@pytest.fixture
def real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return work


@pytest.mark.nvcc
@pytest.mark.parametrize("argv", [
    ["build", "--add", "cu/$(cd;touch PWNED).cu"],
    ["build", "--add", "`cd;touch PWNED`/grid.cu"],
    ["build", "--add", "a;cd;touch PWNED;b\nc/grid.cu:vecadd_grid"],
    ["build", "vecadd", "--add", "-dash.cu"],
    ["build", "vecadd", "--add", "bom.cu", "--add", "cr.cu"],
], ids=["dollar-file", "backtick-folder", "semicolon-newline-function", "dash-nvrtc", "bom-cr-nvrtc"])
def test_real_nvcc_and_nvrtc_never_run_a_name(real, argv):
    for spec in argv[argv.index("--add") + 1::2]:
        path = Path(spec.split(":")[0])
        data = VECADD
        if path.name == "bom.cu":
            data = b"\xef\xbb\xbf" + VECADD
        elif path.name == "cr.cu":
            data = VECADD.replace(b"\n", b"\r")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    before = _hashes(real)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    _no_marker(real, *[p.parent for p in real.rglob("*.cu")])
    assert _hashes(real) == before


@pytest.mark.nvcc
def test_real_nvcc_maps_an_error_back_to_the_users_file_name(real):
    path = real / "$(cd;touch PWNED)" / "broken.cu"
    path.parent.mkdir()
    path.write_bytes(VECADD.replace(b"a[i] + b[i]", b"a[i] + "))
    result = CliRunner().invoke(app, ["build", "--add", str(path)])
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert "broken.cu:" in result.stderr and "source.cu" not in result.stderr
    _no_marker(real, path.parent)
