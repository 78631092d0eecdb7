"""The .cuh headers a kernel file's compile depends on, for the compile caches' keys: the headers
beside it (its family's shared headers) and those it #includes by a relative path (another
family's, e.g. fused/winograd.cu includes ../conv2d/winograd_pipeline.cuh), followed through the
headers' own includes. An edited header then changes the key, and no stale build is served."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from gpuprof.errors import InputError
from gpuprof.files import read_bytes, read_source
from gpuprof.tools.include_check import MAX_SOURCE_BYTES

_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.MULTILINE)


def kernel_headers(file: Path) -> list[Path]:
    """The headers beside `file` and every .cuh it reaches through quoted #includes, resolved
    against the including file's folder as nvcc resolves them (sorted, each once)."""
    start = file.resolve()
    found = {header.resolve() for header in start.parent.glob("*.cuh") if header.is_file()}  # no FIFO
    todo, seen = [start, *found], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            text = read_source(current, max_bytes=MAX_SOURCE_BYTES)
        except (OSError, InputError):  # unreadable, special, too big: the compile refuses it in its words
            continue
        for name in _QUOTED_INCLUDE.findall(text):
            target = (current.parent / name).resolve()
            if target.suffix == ".cuh" and target.is_file():
                found.add(target)
                todo.append(target)
    return sorted(found)


def headers_digest(file: Path) -> str:
    """A digest of kernel_headers(file), names and contents."""
    digest = hashlib.sha256()
    for header in kernel_headers(file):
        try:
            data = read_bytes(header, max_bytes=MAX_SOURCE_BYTES)
        except InputError:  # became special or too big since: the compile refuses it
            data = b""
        digest.update(header.name.encode() + b"\0" + data)
    return digest.hexdigest()[:16]
