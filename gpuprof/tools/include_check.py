"""Refuse, before a compiler runs, a source whose quoted #include reaches something that is not a
regular file (a FIFO with no writer, /dev/zero, /dev/stdin, a folder) or a file over the source size
limit: the compiler would wait on it, or read it without end. Followed through the included
headers' own quoted includes, resolved as the compiler resolves them (the including file's folder,
then the -I folders), a bounded number of files deep."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from gpuprof.errors import InputError
from gpuprof.files import file_kind

MAX_SOURCE_BYTES = 8 * 1024 * 1024  # a hand-written kernel with its headers is far below this
MAX_FILES = 512  # headers followed at most; beyond that the compiler's own limits apply

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\r\n]+)"|<(/[^>\r\n]+)>)', re.MULTILINE)



def _included(name: str, folder: Path, include_dirs: Sequence[Path]) -> Path | None:
    """The file the compiler would open for `#include "name"`: first one that exists."""
    for base in (folder, *include_dirs):
        candidate = base / name
        try:
            os.stat(candidate)
        except (OSError, ValueError):
            continue
        return candidate
    return None


def check_includes(source: Path, text: str, include_dirs: Sequence[Path] = (), shown: str | None = None) -> None:
    """InputError (exit 2) for the first quoted #include of `text` (the source at `source`) or of
    the headers it reaches that is not a regular file, or is over MAX_SOURCE_BYTES."""
    label = shown or str(source)
    todo: list[tuple[Path, str]] = [(source.parent, text)]
    seen: set[Path] = set()
    while todo and len(seen) < MAX_FILES:
        folder, body = todo.pop()
        for quoted, absolute in _INCLUDE.findall(body):
            name = quoted or absolute
            target = _included(name, folder, include_dirs)
            if target is None:
                continue  # missing: the compiler says so in its own words
            info = target.stat()
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"{label}: #include \"{name}\" is {file_kind(info.st_mode)}, not a regular file; "
                                 "refused before the compiler runs")
            if info.st_size > MAX_SOURCE_BYTES:
                raise InputError(f"{label}: #include \"{name}\" is {info.st_size:,} bytes, more than the "
                                 f"{MAX_SOURCE_BYTES:,} a source may have")
            real = target.resolve()
            if real in seen:
                continue
            seen.add(real)
            try:
                todo.append((target.parent, real.read_bytes()[:MAX_SOURCE_BYTES].decode("utf-8", "replace")))
            except OSError:
                continue  # unreadable: the compiler says so
