"""The wall time of each `gpuprof sanitize` child, kept between runs (a small JSON file in gpuprof's
cache folder) so the next run can start its slowest children first and split the ones that would
otherwise finish last (sanitize_plan).

A child is keyed by what it runs: tool, family, its variants in order, the size and the options the
child gets (-D defines, --add). A missing, unreadable or foreign file is the same as no file: the
plan falls back to its static estimate, and the next run writes a good one (atomically, merged with
what was there, newest entries kept)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuprof.errors import GpuprofError
from gpuprof.files import atomic_write_text
from gpuprof.paths import CACHE_DIR
from gpuprof.tools.target import LaunchTarget

SCHEMA = "gpuprof.sanitize-times/1"
KEEP = 1000  # entries kept: the newest (a course is ~60 children; room for several sizes and options)
FILE_NAME = "sanitize-times.json"


def default_path() -> Path:
    return CACHE_DIR / FILE_NAME


@dataclass(frozen=True)
class ChildKey:
    """What one sanitizer child runs."""

    tool: str
    family: str
    variants: tuple[str, ...]
    size: str  # as the child gets it: "n=4097"
    options: tuple[str, ...] = ()  # the child's --define and --add arguments

    @property
    def context(self) -> tuple[str, str, str, tuple[str, ...]]:
        """Everything but the variants: children with the same context time comparable work."""
        return self.tool, self.family, self.size, self.options


def key_of(targets: Sequence[LaunchTarget], tool: str) -> ChildKey:
    """The key of the child that runs `targets` (one family, size and option set) under `tool`."""
    first = targets[0]
    options: list[str] = []
    for name, value in first.defines.items():
        options += ["--define", f"{name}={value}"]
    size = ",".join(f"{k}={v}" for k, v in first.size.items())
    return ChildKey(tool, first.family, tuple(t.variant for t in targets), size, (*options, *first.add))


class ChildTimes:
    """Recorded child wall times, oldest first."""

    def __init__(self, entries: dict[ChildKey, float] | None = None) -> None:
        self.entries: dict[ChildKey, float] = dict(entries or {})

    def __len__(self) -> int:
        return len(self.entries)

    def exact(self, key: ChildKey) -> float | None:
        return self.entries.get(key)

    def variant_share(self, key: ChildKey, variant: str, fixed_s: float) -> float | None:
        """Seconds `variant` added to a child of key's context beyond a child's fixed cost: from a
        child that ran it alone, else an even share of the smallest recorded child that ran it.
        None when no child of this context ran it."""
        best: tuple[int, float] | None = None
        for other, seconds in self.entries.items():
            if other.context != key.context or variant not in other.variants:
                continue
            share = max(0.0, seconds - fixed_s) / len(other.variants)
            if best is None or len(other.variants) < best[0]:
                best = (len(other.variants), share)
        return None if best is None else best[1]

    def merged(self, finished: Iterable[tuple[ChildKey, float]]) -> ChildTimes:
        """These times with `finished` added (replacing a child's older time), the newest KEEP kept."""
        entries = dict(self.entries)
        for key, seconds in finished:
            entries.pop(key, None)  # re-inserted last: the newest
            entries[key] = seconds
        kept = list(entries.items())[-KEEP:]
        return ChildTimes(dict(kept))


def load(path: Path) -> ChildTimes:
    """The recorded times; empty when the file is missing, unreadable or not ours (no error: the
    plan then uses its static estimate)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(document, dict) or document.get("schema") != SCHEMA:
            return ChildTimes()
        entries = {}
        for entry in document["children"]:
            key = ChildKey(str(entry["tool"]), str(entry["family"]), tuple(str(v) for v in entry["variants"]),
                           str(entry["size"]), tuple(str(o) for o in entry.get("options", ())))
            seconds = float(entry["seconds"])
            if key.variants and seconds >= 0:
                entries[key] = seconds
        return ChildTimes(entries)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return ChildTimes()


def save(path: Path, times: ChildTimes) -> str | None:
    """Write the times atomically; None, or why they could not be kept (a note, never an error:
    the sanitizer's findings do not depend on it)."""
    children = [{"tool": k.tool, "family": k.family, "variants": list(k.variants), "size": k.size,
                 "options": list(k.options), "seconds": round(s, 2)} for k, s in times.entries.items()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"schema": SCHEMA, "children": children}, indent=1) + "\n")
    except OSError as exc:
        return f"child times not recorded in {path}: {exc.strerror or exc}"
    except GpuprofError as exc:
        return f"child times not recorded: {exc.message}"
    return None
