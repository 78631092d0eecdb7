"""The racecheck triage's verdicts (does a variant's code use shared memory, per ptxas), kept in
gpuprof's cache so a warm `gpuprof sanitize` does not compile every CUDA variant with nvcc again
before its first sanitizer child can start.

A verdict is keyed by everything the compile saw: the source's bytes and those of every header it
includes from its own folder (quoted includes, followed recursively; an angle include found
there too), the -D defines, the kernels asked about, the architecture, and nvcc's path, size and
modification time (a new toolkit is a new nvcc). A source that includes a quoted header that is not
there is never cached: the compile decides. A missing or unreadable entry is a cache miss."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from gpuprof.errors import GpuprofError
from gpuprof.files import atomic_write_text
from gpuprof.paths import CACHE_DIR

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)
MAX_HEADERS = 200  # a guard against an include cycle or a header forest: then no caching


def folder() -> Path:
    return CACHE_DIR / "racecheck-triage"


def source_digest(source: Path) -> str | None:
    """A digest of the source and the headers it includes from its own folder; None when a quoted
    include is not found there (its content is unknown, so the verdict must not be cached)."""
    root = source.resolve().parent
    digest = hashlib.sha256()
    seen: set[Path] = set()
    pending = [source.resolve()]
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        if len(seen) > MAX_HEADERS:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        digest.update(str(path).encode() + b"\0" + data + b"\0")
        for quote, name in _INCLUDE.findall(data.decode("utf-8", errors="replace")):
            found = next((c for c in (path.parent / name, root / name) if c.is_file()), None)
            if found is not None:
                pending.append(found.resolve())
            elif quote == '"':
                return None  # not beside the source: nvcc would look elsewhere, or fail
    return digest.hexdigest()


def key(source: Path, defines: dict[str, int], kernels: tuple[str | None, ...], arch: str,
        nvcc: str) -> str | None:
    sources = source_digest(source)
    if sources is None:
        return None
    try:
        stat = os.stat(nvcc)
    except OSError:
        return None
    parts = [sources, arch, repr(sorted(defines.items())), repr(kernels),
             f"{Path(nvcc).resolve()}:{stat.st_size}:{stat.st_mtime_ns}"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def load(cache_key: str) -> bool | None:
    try:
        verdict = json.loads((folder() / f"{cache_key}.json").read_text(encoding="utf-8"))["uses_shared_memory"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return verdict if isinstance(verdict, bool) else None


def save(cache_key: str, uses: bool) -> None:
    """Best effort: a verdict not kept is computed again next time."""
    try:
        folder().mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder() / f"{cache_key}.json", json.dumps({"uses_shared_memory": uses}) + "\n")
    except (OSError, GpuprofError):
        pass
