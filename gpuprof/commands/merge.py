"""`gpuprof merge`'s core: join results files (the shards of a suite run on several machines, or any
files of disjoint rows) into one, after checking they were measured alike.

Files measured on different GPU models, drivers or gpuprof versions are refused unless
`allow_mixed`: a table whose rows came from two GPUs compares nothing. A row id found in two files is
refused always (a shard run twice, or the same file given twice). Rows of suite shards go back into
the suite's order (each shard's `"shard"` record holds its rows' places); other files' rows follow
in the order given. Speedups of shard rows are computed again over the joined tables, since a
shard may have held a family's variants without its baseline.

The joined file's "families" block is the union of the inputs' blocks, so shards of a family this
machine lacks merge as any others. A family two files describe differently (another rate kind,
formula, baseline, or one variant two ways; `source`, a folder path that differs between machines,
does not count) keeps the first file's description, and a warning line names the later file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuprof import results
from gpuprof.commands.suite import store_speedups
from gpuprof.errors import InputError, UsageError
from gpuprof.families.described import joined
from gpuprof.progress import ProgressFn, tell

# Fingerprint fields that must agree, with the words a refusal uses for them.
MUST_AGREE = {"gpu_name": "GPU model", "driver_version": "driver", "gpuprof_version": "gpuprof version"}
# The suite-level records a --gpus run keeps about its own schedule: they describe one file, not the join.
_PER_FILE_ENVIRONMENT = ("schedule", "gpus")


@dataclass(frozen=True)
class MergeRequest:
    files: tuple[Path, ...]
    allow_mixed: bool = False


@dataclass
class MergeResult:
    results: results.Results
    notes: list[str] = field(default_factory=list)  # what the user should know (missing shards, mixed files)


def execute(request: MergeRequest, progress: ProgressFn | None = None) -> MergeResult:
    if len(request.files) < 2:
        raise UsageError("give at least two results files to merge")
    seen_paths: set[Path] = set()
    for path in request.files:
        resolved = path.resolve()
        if resolved in seen_paths:
            raise UsageError(f"{path} is given twice")
        seen_paths.add(resolved)
    loaded = []
    for index, path in enumerate(request.files):
        tell(progress, str(path), "load", index, len(request.files))
        loaded.append(results.load(path))
    return merge(list(zip(request.files, loaded)), request.allow_mixed)


def merge(files: list[tuple[Path, results.Results]], allow_mixed: bool = False) -> MergeResult:
    """The join of already loaded files, labelled by their paths."""
    notes = _check_alike(files, allow_mixed)
    notes += _check_shards(files)
    owner: dict[str, Path] = {}
    placed: list[tuple[tuple[int, int, int], results.Row]] = []
    for file_index, (path, part) in enumerate(files):
        found = part.shard.get("order")
        order: dict[str, Any] = found if isinstance(found, dict) else {}
        for row_index, row in enumerate(part.rows):
            if row.id in owner:
                raise InputError(f"row {row.id} is in both {owner[row.id]} and {path}: "
                                 "a shard given twice, or files that overlap")
            owner[row.id] = path
            place = order.get(row.id)
            key = (0, int(place), 0) if isinstance(place, int) else (1, file_index, row_index)
            placed.append((key, row))
    placed.sort(key=lambda item: item[0])
    first = files[0][1]
    environment = {k: v for k, v in first.environment.items() if k not in _PER_FILE_ENVIRONMENT}
    merged = results.Results(
        environment=environment,
        rows=[row for _, row in placed],
        command="gpuprof merge " + " ".join(str(p) for p, _ in files),
        created_utc=max((r.created_utc for _, r in files), default=""),
        timing_policy=first.timing_policy,
        compare=first.compare,
        shard={"merged": [_record(path, part) for path, part in files]},
    )
    for path, part in files:  # every family of the join, described as its first file has it
        notes += [f"{path}: {line}" for line in joined(merged.families, part.families)]
    shard_families = {row.family for _, part in files if part.shard.get("order") for row in part.rows}
    if shard_families:
        store_speedups(merged, only=shard_families)
    return MergeResult(merged, notes)


def _check_alike(files: list[tuple[Path, results.Results]], allow_mixed: bool) -> list[str]:
    """Refuse (or, with allow_mixed, note) files whose GPU model, driver or gpuprof version differ."""
    first_path, first = files[0]
    notes = []
    for path, part in files[1:]:
        for key, words in MUST_AGREE.items():
            mine, theirs = first.environment.get(key), part.environment.get(key)
            if mine != theirs:
                message = f"{first_path} and {path} differ in {words}: {mine} vs {theirs}"
                if not allow_mixed:
                    raise InputError(message + " (--allow-mixed joins them anyway)")
                notes.append(message + "; joined as --allow-mixed asked")
        if part.timing_policy.get("suite") != first.timing_policy.get("suite"):
            notes.append(f"{first_path} and {path} come from different suites "
                         f"({first.timing_policy.get('suite')} vs {part.timing_policy.get('suite')})")
    return notes


def _check_shards(files: list[tuple[Path, results.Results]]) -> list[str]:
    """Shards of one split: the same N, each K once; a missing K is noted (its rows are absent)."""
    shards = [(path, part.shard) for path, part in files if "index" in part.shard]
    if not shards:
        return []
    counts = {s.get("count") for _, s in shards}
    if len(counts) > 1:
        raise InputError("the shards come from different splits: "
                         + ", ".join(f"{path} is {s.get('index')}/{s.get('count')}" for path, s in shards))
    by_index: dict[Any, Path] = {}
    for path, s in shards:
        if s.get("index") in by_index:
            raise InputError(f"{by_index[s.get('index')]} and {path} are both shard {s.get('index')}/{s.get('count')}")
        by_index[s.get("index")] = path
    count = int(next(iter(counts)) or 0)  # a whole number from 1 to MAX_SHARDS: results.load checked it
    missing = [k for k in range(1, count + 1) if k not in by_index]
    if missing:
        many = len(missing) > 1
        shown = ", ".join(map(str, missing[:10])) + (f" and {len(missing) - 10:,} more" if len(missing) > 10 else "")
        return [(f"shard{'s' if many else ''} {shown} of {count} not given: "
                 f"{'their' if many else 'its'} rows are missing from the merged file")]
    return []


def _record(path: Path, part: results.Results) -> dict[str, Any]:
    env = part.environment
    record = {"file": path.name, "rows": len(part.rows), "created_utc": part.created_utc,
              "gpu_name": env.get("gpu_name"), "gpu_uuid": env.get("gpu_uuid"),
              "driver_version": env.get("driver_version"), "gpuprof_version": env.get("gpuprof_version")}
    if "index" in part.shard:
        record["shard"] = f"{part.shard['index']}/{part.shard.get('count')}"
    return record
