"""The one way gpuprof reads a file the user gave it, the checks before it writes one, and the
one way it writes one (atomically, or straight into a device or stream).

Every reader goes through `read_bytes`, `read_text` or `read_source`, so a missing, unreadable,
huge, binary or wrongly encoded file, a FIFO, a device or a folder is an InputError (exit 2) naming
the file and what is wrong, never a hang or a UnicodeDecodeError traceback. The files gpuprof
writes for the user (results, reports, summaries) go through `atomic_write_text`, so an
interrupted write never leaves a broken one.

What an output path is decides how it is written (docs/options.md, "Where gpuprof writes"): a
regular file is replaced atomically, keeping its mode, and only when gpuprof wrote it (its own
marker is in it: see is_own) or --force is given; a character device or a pipe (/dev/null, a
terminal, /dev/stdout and its kin) is written into, never replaced; a link (other than one to a
device or pipe), a folder, a block device or a socket is refused.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gpuprof.errors import EnvironmentProblem, InputError, UsageError

# Far beyond any suite, manifest, kernel or results file; a bigger one is almost surely the wrong file.
MAX_BYTES = 1 << 30

# The marks gpuprof leaves in what it writes, so that it knows its own files again (and no one else's):
# a JSON document's "schema": "gpuprof.<command>", this last line of a Markdown file (at the end, where
# a step summary hides it), and a PNG's
# "Software" text chunk (SVG: its "Creator") starting with PLOT_SOFTWARE, and an HTML page's
# generator meta tag (HTML_MARK, in its head).
JSON_SCHEMA_PREFIX = "gpuprof."
HTML_MARK = '<meta name="generator" content="gpuprof">'
MARKDOWN_MARK = "\n<!-- written by gpuprof: gpuprof replaces this file when asked to write it again -->\n"
PLOT_SOFTWARE = "gpuprof"
# github-action-benchmark's list format holds no marker of its own: a list is ours when it is not empty
# and every entry has only the keys gpuprof writes, a row id (family/variant/size) for its name, and an
# "extra" text ending with GAB_MARK ([] or another tool's list is a user's file).
GAB_MARK = " (gpuprof)"
_GAB_KEYS = {"name", "unit", "value", "range", "extra"}
_ROW_ID = re.compile(r"[^/\s]+/[^/\s]+/[0-9x]+")


def file_kind(mode: int) -> str:
    """What a path that is not a regular file is, in words (from its stat mode)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _regular_or_refuse(path: Path, label: str) -> int:
    """The file's size; InputError for a folder, FIFO, device or socket (reading one could hang or
    never end: a FIFO with no writer, /dev/zero)."""
    info = path.stat()
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"cannot read {label}: it is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"cannot read {label}: it is {file_kind(info.st_mode)}, not a regular file")
    return info.st_size


GZIP_MAGIC = b"\x1f\x8b"


def _gunzipped(data: bytes, label: str, max_bytes: int) -> bytes:
    """A gzip file's contents, at most max_bytes of them (a small file can hold gigabytes of zeros)."""
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflate.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise InputError(f"{label}: not a valid gzip file ({exc})") from None
    if len(out) > max_bytes:
        raise InputError(f"cannot read {label}: more than the {max_bytes:,} bytes gpuprof reads, once decompressed")
    if not inflate.eof:
        raise InputError(f"{label}: a truncated gzip file")
    return out


def read_bytes(path: str | Path, what: str = "", max_bytes: int = MAX_BYTES, gunzip: bool = False) -> bytes:
    """The file's bytes; InputError naming `what` (e.g. 'suite') and the file otherwise. gunzip: a
    gzip file (by its first bytes, whatever its name) is decompressed, within the same limit."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    try:
        size = _regular_or_refuse(path, label)
        if size > max_bytes:
            raise InputError(f"cannot read {label}: {size:,} bytes is more than the {max_bytes:,} gpuprof reads")
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)  # a file that grew since stat() is still bounded
        if len(data) > max_bytes:
            raise InputError(f"cannot read {label}: more than the {max_bytes:,} bytes gpuprof reads")
        return _gunzipped(data, label, max_bytes) if gunzip and data.startswith(GZIP_MAGIC) else data
    except OSError as exc:
        raise InputError(f"cannot read {label}: {_reason(exc)}") from None
    except ValueError as exc:  # an embedded NUL in the path
        raise InputError(f"cannot read {label}: {exc}") from None


def read_text(path: str | Path, what: str = "", max_bytes: int = MAX_BYTES, gunzip: bool = False) -> str:
    """A UTF-8 text file (suites, manifests, results, logs): anything else is one clear error.
    gunzip: the text may be gzip-compressed (a results file kept as .json.gz)."""
    data = read_bytes(path, what, max_bytes, gunzip)
    label = f"{what} {path}" if what else str(path)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"{label}: UTF-16 text; save it as UTF-8")
    if b"\x00" in data[:8192]:
        raise InputError(f"{label}: a binary file, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        byte = data[exc.start]
        raise InputError(f"{label}: line {line}: not UTF-8 text (byte 0x{byte:02x}); save it as UTF-8") from None


def read_toml(path: str | Path, what: str = "") -> dict[str, Any]:
    """A TOML file (suite, manifest) parsed: invalid or absurdly nested TOML is one InputError."""
    import tomllib

    text = read_text(path, what)
    label = f"{what} {path}" if what else str(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{label}: not valid TOML: {exc}") from None  # the message has line and column
    except RecursionError:
        raise InputError(f"{label}: TOML nested too deep") from None


def read_source(path: str | Path, what: str = "", max_bytes: int = MAX_BYTES) -> str:
    """A CUDA or Python source, read as the compiler would: bytes, with a lenient decode, so a
    Latin-1 comment (`// René ©`) costs nothing. Only a binary file is refused. A UTF-8 BOM is
    dropped (nvcc skips it, NVRTC does not) and CR or CRLF line ends become LF (old Mac editors
    write CR alone, which a line-by-line reader would take for one long line)."""
    data = read_bytes(path, what, max_bytes)
    label = f"{what} {path}" if what else str(path)
    if b"\x00" in data[:8192]:
        raise InputError(f"{label}: a binary file, not source code")
    text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def is_stream(path: Path | str) -> bool:
    """A path written into, never replaced: a character device or a pipe (/dev/null, a terminal,
    /dev/stdout), or a link into a process's open files (/dev/stdout -> /proc/self/fd/1, whatever
    that fd is: replacing what it resolves to would cut the shell's redirection off)."""
    path = Path(path)
    try:
        info = path.stat()
    except (OSError, ValueError):
        return False
    if stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode):
        return True
    return path.is_symlink() and _through_proc(path)


def _through_proc(path: Path) -> bool:
    """Whether following `path`'s links passes through /proc/<pid>/fd or /dev/fd."""
    seen = 0
    current = path
    while current.is_symlink() and seen < 40:
        target = Path(os.readlink(current))
        current = target if target.is_absolute() else current.parent / target
        text = str(current)
        if text.startswith(("/proc/", "/dev/fd/")):
            return True
        seen += 1
    return False


def is_own_stdout(path: Path | str) -> bool:
    """`--json /dev/stdout` (or any name of this process's stdout): the same as `--json -`."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(1))
    except (OSError, ValueError):
        return False


def check_outputs(inputs: Iterable[Path | str | None], outputs: dict[str, Path | str | None],
                  force: bool = False) -> None:
    """Before any work: no output is one of the inputs (or another output), and each output is a path
    gpuprof may write (check_output). `outputs` maps option name -> path."""
    given_inputs = [Path(p) for p in inputs if p is not None and str(p) != "-"]
    seen: dict[Path, str] = {}
    for option, target in outputs.items():
        if target is None or str(target) == "-":
            continue
        target = Path(target)
        for source in given_inputs:
            if _same(source, target) and not is_stream(target):
                raise UsageError(f"{option} {target} is also an input; gpuprof never writes over its inputs")
        if is_stream(target):
            continue  # /dev/null, a terminal, a pipe: written into, nothing replaced
        check_output(target, option, force)
        resolved = _resolved(target)
        if resolved in seen:
            raise UsageError(f"{option} and {seen[resolved]} both name {target}; give different files")
        seen[resolved] = option


def _resolved(path: Path) -> Path:
    try:
        return path.parent.resolve() / path.name
    except (OSError, RuntimeError, ValueError):
        return path.absolute()


def check_output(target: Path, option: str = "", force: bool = False) -> None:
    """The output rule (docs/options.md, "Where gpuprof writes"), decided by what `target` is: a new
    name in a writable folder, or a regular file gpuprof wrote (its marker, is_own) is written; a
    user's file only with --force; a link (other than a stream's), a folder, a block device, a socket
    never. Every refusal is a UsageError (exit 2) of one line."""
    label = f"{option} {target}" if option else str(target)
    try:
        info = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        check_folder(target)  # says which: a missing folder, a file where a folder should be
        return
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot write {target}: {_path_reason(exc)}") from None
    if stat.S_ISLNK(info.st_mode):
        if is_stream(target):
            return
        raise UsageError(f"{label} is a symbolic link{_link_state(target)}; gpuprof never writes through a link: "
                         "give the file's own path")
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{label} is a folder; give a file name")
    if stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode):
        return
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{label} is {file_kind(info.st_mode)}; "
                         "gpuprof writes files, character devices and pipes only")
    if not force and not is_own(target):
        raise UsageError(f"{label} exists and was not written by gpuprof; choose another name or add --force to "
                         "replace it")
    check_folder(target)


def _entry(path: Path, verb: str) -> os.stat_result | None:
    """What is at path itself (a link is not followed); None when nothing is; a name that cannot be
    looked up is one line: "cannot <verb> <path>: <why>"."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot {verb} {path}: {_path_reason(exc)}") from None


def own_folder(path: Path) -> Path:
    """A folder gpuprof keeps its own files in (made where missing), which it may write into and
    empty of its own files: a link there, or anything but a folder, is refused (UsageError, one line),
    since what gpuprof writes or deletes inside must never land in a folder it did not make."""
    info = _entry(path, "use")
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise UsageError(f"{path} is a symbolic link{_link_state(path)}; gpuprof never writes into or empties a "
                         "folder through a link")
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{path} is {file_kind(info.st_mode)}, where gpuprof keeps a folder of its own")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_failed(path, exc) from None
    return path


def check_folder(target: Path) -> None:
    """The folder a new file goes into exists, is a folder and can be written; the name fits."""
    folder, label = target.parent, f"cannot write {target}"
    size, most = len(os.fsencode(target.name)), _name_max(folder)
    if size > most:
        raise UsageError(f"{label}: file name too long ({size} bytes; at most {most})")
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        raise UsageError(f"{label}: directory {folder} does not exist") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{label}: directory {folder}: {_path_reason(exc)}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{label}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{label}: directory {folder} is not writable")


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder if folder.is_dir() else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _link_state(path: Path) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return " in a loop"
        return " to nothing"
    except ValueError:
        return ""
    return ""


def _path_reason(exc: OSError | ValueError) -> str:
    if isinstance(exc, ValueError):
        return str(exc)
    if exc.errno == errno.ENAMETOOLONG:
        return "file name too long"
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop in the path"
    return _reason(exc)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except (OSError, ValueError, RuntimeError):
        return False


def is_own(path: Path) -> bool:
    """An empty file, or one that carries gpuprof's own marker: a JSON document
    with "schema": "gpuprof.…", a Markdown file ending with MARKDOWN_MARK, a plot whose metadata
    names gpuprof as its software. A word in the first bytes proves nothing."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    if not head.strip():
        return True
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return _png_software(path).startswith(PLOT_SOFTWARE)
    if _tail(path).endswith(MARKDOWN_MARK.encode()):
        return True
    if head.lstrip()[:15].lower() == b"<!doctype html>":
        return HTML_MARK.encode() in head
    if head.lstrip().startswith(b"<?xml") or head.lstrip().startswith(b"<svg"):
        return f"<dc:title>{PLOT_SOFTWARE}".encode() in head and b"<dc:creator>" in head
    if head.lstrip()[:1] in (b"{", b"["):
        try:
            data = json.loads(read_bytes(path))
        except (InputError, ValueError, RecursionError):
            return False
        if isinstance(data, dict):
            schema = data.get("schema")
            # nsys files of earlier gpuprofs carry only their own version key
            return (isinstance(schema, str) and schema.startswith(JSON_SCHEMA_PREFIX)) or "gpuprof_nsys_schema" in data
        return isinstance(data, list) and bool(data) and all(
            isinstance(e, dict) and set(e) <= _GAB_KEYS and {"name", "unit", "value"} <= set(e)
            and isinstance(e["name"], str) and _ROW_ID.fullmatch(e["name"]) is not None
            and isinstance(e.get("extra"), str) and e["extra"].endswith(GAB_MARK) for e in data)
    return False


def _tail(path: Path, size: int = 512) -> bytes:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - size))
            return handle.read(size)
    except OSError:
        return b""


def _png_software(path: Path) -> str:
    """The PNG's tEXt "Software" value ('' if none): matplotlib writes savefig's metadata there."""
    try:
        data = read_bytes(path, max_bytes=64 << 20)
    except InputError:
        return ""
    at = 8
    while at + 8 <= len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind = data[at + 4:at + 8]
        body = data[at + 8:at + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\x00")
            if key == b"Software":
                return value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\x00")
            if key == b"Software":
                try:
                    return zlib.decompress(rest[1:]).decode("latin-1")
                except zlib.error:
                    return ""
        elif kind in (b"IDAT", b"IEND"):
            break  # text chunks before the image data are the ones matplotlib writes
        at += 12 + length
    return ""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _reason(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on device"
    return exc.strerror or str(exc)


def write_failed(path: Path | str, exc: OSError) -> EnvironmentProblem | InputError:
    """A full disk or quota is the machine's state (exit 3); any other failure is the path's (exit 2)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return EnvironmentProblem(f"cannot write {path}: no space left on device")
    return InputError(f"cannot write {path}: {_path_reason(exc)}")


WRITTEN: list[Path] = []  # the files this process has written, for the line an interrupted command ends with


def atomic_write_text(path: Path, text: str | Iterable[str]) -> Path:
    """A temporary file in the same directory, fsync, then rename over the target, keeping an old
    file's mode. text may come in pieces (a large report need not be joined into one string first).
    A device or pipe is written into instead (is_stream); a link is never written through."""
    def write(handle: Any) -> None:
        if isinstance(text, str):
            handle.write(text.encode("utf-8"))
        else:
            for piece in text:
                handle.write(piece.encode("utf-8"))

    return _atomic(Path(path), write, lambda: _write_stream(Path(path), text))


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """atomic_write_text for bytes (a PNG)."""
    def into_stream() -> Path:
        try:
            with _open_stream(Path(path)) as handle:
                handle.write(data)
        except OSError as exc:
            raise write_failed(path, exc) from None
        return Path(path)

    return _atomic(Path(path), lambda handle: handle.write(data), into_stream)


def _atomic(path: Path, write: Any, into_stream: Any) -> Path:
    if is_stream(path):
        return Path(into_stream())
    info = _entry(path, "write")
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise UsageError(f"cannot write {path}: a symbolic link{_link_state(path)}; "
                         "gpuprof never writes through a link")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise UsageError(f"cannot write {path}: it is {file_kind(info.st_mode)}")
    if not path.parent.is_dir():
        raise InputError(f"cannot write {path}: directory {path.parent} does not exist")
    mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".gpuprof.", suffix=".tmp", dir=path.parent)  # a short name: a
        with os.fdopen(fd, "wb") as handle:  # 255-byte target's own name plus a suffix would be too long
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)  # mkstemp makes 0600; a new file is an ordinary one, an old one keeps its mode
        os.replace(tmp, path)
        if not WRITTEN or WRITTEN[-1] != path:  # a suite rewrites its file after every variant
            WRITTEN.append(path)
    except OSError as exc:
        raise write_failed(path, exc) from None
    finally:
        if tmp is not None and os.path.lexists(tmp):
            Path(tmp).unlink(missing_ok=True)
    return path


def read_lines(path: str | Path, what: str = "", max_bytes: int = MAX_BYTES, gunzip: bool = False) -> Iterator[str]:
    """A UTF-8 text file line by line, with read_text's checks and messages, so a large file (an
    18k-row results file is hundreds of MB) is never held whole. gunzip: a gzip file is decompressed
    as it is read, at most max_bytes of it."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    try:
        size = _regular_or_refuse(path, label)  # a FIFO would block, a device never end
        if size > max_bytes:
            raise InputError(f"cannot read {label}: {size:,} bytes is more than the {max_bytes:,} gpuprof reads")
        stream = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {label}: {_reason(exc)}") from None
    except ValueError as exc:  # an embedded NUL in the path
        raise InputError(f"cannot read {label}: {exc}") from None
    with stream:
        lines: Iterator[bytes] = _gunzipped_lines(stream, label, max_bytes) if gunzip else iter(stream)
        for number, raw in enumerate(lines, 1):
            if number == 1:
                if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
                    raise InputError(f"{label}: UTF-16 text; save it as UTF-8")
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if b"\x00" in raw:
                raise InputError(f"{label}: a binary file, not text")
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"{label}: line {number}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); "
                                 "save it as UTF-8") from None


def _gunzipped_lines(stream: Any, label: str, max_bytes: int) -> Iterator[bytes]:
    """The stream's lines, decompressed when it starts with gzip's magic bytes; a corrupt or
    oversized gzip file is one InputError."""
    import gzip

    if stream.peek(2)[:2] != GZIP_MAGIC:
        yield from stream
        return
    total = 0
    try:
        with gzip.GzipFile(fileobj=stream) as inflated:
            for raw in inflated:
                total += len(raw)
                if total > max_bytes:
                    raise InputError(f"cannot read {label}: more than the {max_bytes:,} bytes gpuprof reads, "
                                     "once decompressed")
                yield raw
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise InputError(f"{label}: not a valid gzip file ({exc})") from None


def _write_stream(path: Path, text: str | Iterable[str]) -> Path:
    """Into a device or pipe, appending (a /dev/stdout redirected with >> keeps what it holds)."""
    try:
        with _open_stream(path) as handle:
            if isinstance(text, str):
                handle.write(text.encode("utf-8"))
            else:
                for piece in text:
                    handle.write(piece.encode("utf-8"))
            handle.flush()
    except OSError as exc:
        raise write_failed(path, exc) from None
    return path


def _open_stream(path: Path) -> Any:
    """The device or pipe opened for appending. A named pipe is opened without waiting first: one that
    no process reads from would block the open for ever, so it is one line instead (ENXIO)."""
    flags = os.O_WRONLY | os.O_APPEND
    if stat.S_ISFIFO(os.stat(path).st_mode):
        try:
            fd = os.open(path, flags | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise InputError(f"cannot write {path}: a FIFO (named pipe) that no process reads") from None
            raise
        os.set_blocking(fd, True)
    else:
        fd = os.open(path, flags)
    return os.fdopen(fd, "wb")
