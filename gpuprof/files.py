"""The one way gpuprof reads a file the user gave it, the checks before it writes one, and the
one way it writes one (atomically).

Every reader goes through `read_bytes`, `read_text` or `read_source`, so a missing, unreadable,
huge, binary or wrongly encoded file is an InputError (exit 2) naming the file and what is
wrong, never a UnicodeDecodeError traceback. The files gpuprof writes for the user (results,
reports, summaries) go through `atomic_write_text`, so an interrupted write never leaves a broken one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from gpuprof.errors import InputError, UsageError

# Far beyond any suite, manifest, kernel or results file; a bigger one is almost surely the wrong file.
MAX_BYTES = 1 << 30


def read_bytes(path: str | Path, what: str = "", max_bytes: int = MAX_BYTES) -> bytes:
    """The file's bytes; InputError naming `what` (e.g. 'suite') and the file otherwise."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    try:
        if path.is_dir():
            raise InputError(f"cannot read {label}: it is a folder, not a file")
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(f"cannot read {label}: {size:,} bytes is more than the {max_bytes:,} gpuprof reads")
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror or exc}") from None
    except ValueError as exc:  # an embedded NUL in the path
        raise InputError(f"cannot read {label}: {exc}") from None


def read_text(path: str | Path, what: str = "", max_bytes: int = MAX_BYTES) -> str:
    """A UTF-8 text file (suites, manifests, results, logs): anything else is one clear error."""
    data = read_bytes(path, what, max_bytes)
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


def read_source(path: str | Path, what: str = "") -> str:
    """A CUDA or Python source, read as the compiler would: bytes, with a lenient decode, so a
    Latin-1 comment (`// René ©`) costs nothing. Only a binary file is refused."""
    data = read_bytes(path, what)
    label = f"{what} {path}" if what else str(path)
    if b"\x00" in data[:8192]:
        raise InputError(f"{label}: a binary file, not source code")
    return data.decode("utf-8", errors="replace")


def check_outputs(inputs: Iterable[Path | str | None], outputs: dict[str, Path | str | None],
                  force: bool = False) -> None:
    """Before any work: no output is one of the inputs (or another output), and an existing file that
    gpuprof did not write is replaced only with --force. `outputs` maps option name -> path."""
    given_inputs = [Path(p) for p in inputs if p is not None and str(p) != "-"]
    seen: dict[Path, str] = {}
    for option, target in outputs.items():
        if target is None or str(target) == "-":
            continue
        target = Path(target)
        for source in given_inputs:
            if _same(source, target):
                raise UsageError(f"{option} {target} is also an input; gpuprof never writes over its inputs")
        resolved = target.resolve()
        if resolved in seen:
            raise UsageError(f"{option} and {seen[resolved]} both name {target}; give different files")
        seen[resolved] = option
        if target.is_dir():
            raise UsageError(f"{option} {target} is a folder; give a file name")
        if not force and target.exists() and not _ours(target):
            raise UsageError(f"{option} {target} exists and was not written by gpuprof; "
                             "choose another name or add --force to replace it")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except (OSError, ValueError):
        return False


def _ours(path: Path) -> bool:
    """An empty file, a JSON file with a gpuprof schema, a gpuprof Markdown summary, or an image."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    if not head.strip():
        return True
    if head.startswith(b"\x89PNG") or b"<svg" in head:
        return True  # a plot; gpuprof's plots carry no marker of their own
    if b"gpuprof" in head[:400]:
        return True  # Markdown summaries name gpuprof in their heading
    if head.lstrip().startswith(b"{"):
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return False
        return isinstance(data, dict) and str(data.get("schema", "")).startswith("gpuprof")
    return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str | Iterable[str]) -> Path:
    """A temporary file in the same directory, fsync, then rename over the target. text may come in
    pieces (a large report need not be joined into one string first)."""
    if not path.parent.is_dir():
        raise InputError(f"cannot write {path}: directory {path.parent} does not exist")
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as handle:
            if isinstance(text, str):
                handle.write(text)
            else:
                handle.writelines(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results are ordinary files
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None and Path(tmp).exists():
            Path(tmp).unlink(missing_ok=True)
    return path


def read_lines(path: str | Path, what: str = "", max_bytes: int = MAX_BYTES) -> Iterator[str]:
    """A UTF-8 text file line by line, with read_text's checks and messages, so a large file (an
    18k-row results file is hundreds of MB) is never held whole."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    try:
        if path.is_dir():
            raise InputError(f"cannot read {label}: it is a folder, not a file")
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(f"cannot read {label}: {size:,} bytes is more than the {max_bytes:,} gpuprof reads")
        stream = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror or exc}") from None
    except ValueError as exc:  # an embedded NUL in the path
        raise InputError(f"cannot read {label}: {exc}") from None
    with stream:
        for number, raw in enumerate(stream, 1):
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
