"""The results file: schema dataclasses, SCHEMA_VERSION, load (with upgrades) and atomic save."""

from __future__ import annotations

import collections
import functools
import gc
import json
import math
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Self

from gpuprof.errors import InputError
from gpuprof.files import atomic_write_text, read_lines, read_text
from gpuprof.row_parts import NcuPart, SanitizerPart, ncu_from_dict, ncu_to_dict, sanitizer_from_dict, sanitizer_to_dict

SCHEMA_NAME = "gpuprof.results"
SCHEMA_VERSION = 1
# = measure.timing.MODES (a test keeps them equal): a row of another mode is no row of this gpuprof
TIMING_MODES = ("cold", "hot", "graph", "cupti")
# A row's precision that its file does not say (files of earlier gpuprofs): `show` asks the catalogue,
# and where that does not know either, the row has no ceiling rather than a wrong one (fp32's).
UNKNOWN_PRECISION = ""

# Check statuses. Only "ok" rows get rates and speedups. IMPOSSIBLE: the output passed, but the
# timing cannot be the variant's work (faster than the hardware allows, or its work ran on another
# stream than the one timed); like WRONG, it fails the run (exit 1) and gets no rate.
OK, WRONG, FAULT, TIMEOUT, SKIPPED, IMPOSSIBLE = "ok", "wrong", "fault", "timeout", "skipped", "impossible"
CHECK_STATUSES = (OK, WRONG, FAULT, TIMEOUT, SKIPPED, IMPOSSIBLE)
FAILED_STATUSES = (WRONG, FAULT, TIMEOUT, IMPOSSIBLE)  # a run or suite with one of these exits 1


class Samples(array):
    """Per-sample floats as a compact float64 array (8 bytes each, not a 32-byte Python float in a
    list): an 18k-row results file holds millions of them. Loaded files carry these, measured rows
    plain lists; either compares equal to the list of the same values and writes as a JSON list."""

    __slots__ = ()

    def __new__(cls, values: Sequence[float] = ()) -> Self:
        return super().__new__(cls, "d", values)  # type: ignore[return-value]  # typeshed says array[float]; it is cls

    def __eq__(self, other: object) -> bool:
        if isinstance(other, array):
            return array.__eq__(self, other)
        if isinstance(other, (list, tuple)):
            return self.tolist() == list(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:  # array's own __ne__ knows no lists
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # mutable, like the list it stands for

    def __repr__(self) -> str:
        return f"Samples({self.tolist()!r})"

    def __reduce__(self) -> tuple:
        return type(self), (self.tolist(),)

    def __copy__(self) -> Samples:
        return type(self)(self)

    def __deepcopy__(self, memo: dict) -> Samples:
        return type(self)(self)


# Timing fields holding one float per sample: stored as Samples when a file is loaded.
SAMPLE_FIELDS = ("samples_s", "sm_clock_mhz", "nvml_sm_clock_mhz")


@dataclass
class CheckResult:
    """Correctness of one variant: worst relative error over every size checked."""

    status: str
    max_rel_error: float | None = None
    tolerance: float | None = None
    sizes_checked: list[dict[str, int]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    # What the check did beyond its usual method, for the footnote (a kernel that reads its output).
    notes: list[str] = field(default_factory=list)
    # The size constraints the variant ran under (its family's and its own `require`), and each check
    # size moved to meet them ({"asked": size, "checked": size}); written only when there are some.
    requires: list[str] = field(default_factory=list)
    replaced_sizes: list[dict[str, dict[str, int]]] = field(default_factory=list)
    # The structured input classes (families/input_classes.py) checked at every size besides the
    # random inputs; written only when there are some.
    input_classes: list[str] = field(default_factory=list)


@dataclass
class Summary:
    """Statistics of the raw samples (seconds); rel_spread is the robust relative spread."""

    n: int
    median_s: float
    mean_s: float
    min_s: float
    max_s: float
    p25_s: float
    p75_s: float
    rel_spread: float


@dataclass
class Timing:
    """Raw samples of one variant at one size, how they were taken and why sampling stopped."""

    mode: str
    samples_s: Sequence[float]  # a list when measured, Samples when loaded
    stop_reason: str
    summary: Summary | None
    sm_clock_mhz: Sequence[float] = field(default_factory=list)  # SM clock probed on the GPU after each batch
    launches_per_sample: int = 1
    note: str = ""
    # Smallest change of the median this row can resolve against a twin run: sqrt(2) x the relative
    # half-width of the median's (1 - alpha) interval; None when not computed (older files).
    resolution: float | None = None
    # NVML, sampled around every batch (empty where NVML is unavailable): the SM clock it reported
    # and whether power, thermal or hardware slowdown capped the clocks, per kept sample.
    nvml_sm_clock_mhz: Sequence[float] = field(default_factory=list)
    throttled: list[bool] = field(default_factory=list)
    throttle_reasons: list[str] = field(default_factory=list)  # every capping reason seen, by NVML name
    discarded_throttled: int = 0  # samples thrown away and taken again (--discard-throttled)

    @property
    def throttled_count(self) -> int:
        return sum(self.throttled)


@dataclass(frozen=True, slots=True)
class Derived:
    """A row's derived figures (analysis.derive), the ones its run table prints; the results file
    keeps them under the row's "derived". Percentages are 0-100. The ceiling is the datasheet peak of
    the row's own precision; the measured one (`devicequery --measure`) is kept apart."""

    rate_kind: str  # "flop", "bytes", or "link" (bytes across the host link)
    rate: float | None = None  # work / median (FLOP/s or bytes/s); None unless the row passed its check
    pct_of_ceiling: float | None = None
    ceiling_name: str | None = None
    ceiling_value: float | None = None
    ceiling_source: str | None = None
    pct_of_measured: float | None = None
    measured_name: str | None = None
    measured_source: str | None = None
    over_ceiling: str | None = None  # why a percentage above 100 can be real (a footnote), else None
    floor_s: float | None = None  # the physical floor: the least time the row's work can take
    floor: str | None = None  # how the floor was reckoned
    vs_baseline: float | None = None  # rate / the rate of its table's baseline row (speedups)
    vs_vendor: float | None = None  # rate / the rate of its table's vendor row
    # The measured figure itself is not in the file (its name, source and the % of it are): a loaded
    # row gets it back as rate / %, so it takes no part in comparisons.
    measured_value: float | None = field(default=None, compare=False)


# The keys of a row's "derived" in the results file, in the order written.
DERIVED_KEYS = ("rate", "rate_kind", "pct_of_ceiling", "ceiling_name", "ceiling_value", "ceiling_source",
                "pct_of_measured", "measured_name", "measured_source", "over_ceiling", "floor_s", "floor",
                "vs_baseline", "vs_vendor")
_DERIVED_NUMBERS = {"rate", "pct_of_ceiling", "ceiling_value", "pct_of_measured", "floor_s", "vs_baseline",
                    "vs_vendor"}


@dataclass
class Row:
    """One (family, variant, size) result."""

    family: str
    variant: str
    size: dict[str, int]
    vendor: bool
    check: CheckResult
    timing: Timing | None = None
    flop: float | None = None
    bytes: float | None = None
    technique: str = ""
    defines: dict[str, int] = field(default_factory=dict)  # tile parameters the variant was built with
    precision: str = "fp32"  # the variant's arithmetic; its ceiling is that precision's peak
    flop_count: str = "executed"  # "nominal": flop is the family's formula, not what this algorithm does
    derived: Derived | None = None  # rate, % of ceiling, speedups (analysis.derive); None: not judged
    ncu: NcuPart | None = None  # `--with ncu` (row_parts.py)
    sanitizer: SanitizerPart | None = None  # `--with sanitize`
    control: bool = False  # a suite's `control = true`: compare estimates whole-run shifts from it
    gpu: dict[str, Any] | None = None  # the GPU that timed this row (index, uuid, name, clocks) in --gpus runs
    # Library warnings the row's work raised (measure.library_warnings): {"library", "category",
    # "message"} each, once; written only when there are some, so other rows stay as they were.
    warnings: list[dict[str, str]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return row_id(self.family, self.variant, self.size)

    @property
    def failed(self) -> bool:
        """The row fails its run or suite (exit 1): wrong, faulted, timed out or impossibly fast."""
        return self.check.status in FAILED_STATUSES


# The "families" block: how each family of the file's rows is described (its rate kind, formula,
# baseline, vendor reference, variants), so a file of a family this machine lacks still renders as
# it was run. Versioned on its own: a field added keeps FAMILIES_VERSION, a field renamed, removed
# or redefined bumps it (a file with a newer one is refused, exit 2).
FAMILIES_VERSION = 1
RATE_KINDS = ("flop", "bytes", "link")


@dataclass(frozen=True, slots=True)
class VariantInfo:
    """One variant of a FamilyInfo, as the run that wrote the file knew it."""

    name: str
    technique: str = ""
    precision: str = "fp32"
    vendor: bool = False
    user: bool = False  # added from the command line or a kernels_dir, not in the family's folder
    constraints: tuple[str, ...] = ()  # the variant's `require` constraints, as text; () where none
    call: str | None = None  # a vendor variant's library call (the manifest's `call`), for the vendor footnote


@dataclass(frozen=True, slots=True)
class FamilyInfo:
    """A family as the run that wrote the file described it (families.described.family_info builds
    it from the Family and its host module). `source` (a built-in name or the folder's path) is
    informational: readers never load anything from it."""

    summary: str
    rate_kind: str  # RATE_KINDS: what the run table's rate column is (TFLOP/s or GB/s)
    formula: str  # the rate formula printed under the run table (the host module's FORMULA)
    dims: tuple[str, ...]
    baseline: str  # the variant speedups are relative to
    vendor_reference: str | None = None
    source: str = ""
    variants: tuple[VariantInfo, ...] = ()
    constraints: tuple[str, ...] = ()  # the family's own `require` constraints, as text
    switches: tuple[str, ...] = ()  # dims that are 0 or 1 (attention's causal); a size of 0 is legal there only

    def variant(self, name: str) -> VariantInfo | None:
        return next((v for v in self.variants if v.name == name), None)


@dataclass
class Results:
    """A whole results file."""

    environment: dict[str, Any]
    rows: list[Row]
    command: str = ""
    created_utc: str = ""
    timing_policy: dict[str, Any] = field(default_factory=dict)
    compare: dict[str, Any] = field(default_factory=dict)  # a suite's compare table, e.g. {"preset": "strict"}
    # `suite --shard K/N`: {"index": K, "count": N, "units": the suite's unit count, "order": {row id:
    # its place in the whole suite}}; `gpuprof merge`: {"merged": [one record per file joined]}.
    # Written only when set, so other files stay as they were.
    shard: dict[str, Any] = field(default_factory=dict)
    # The "families" block by family name (FamilyInfo); empty for files written before it (readers
    # then ask this machine's registry), and then not written.
    families: dict[str, FamilyInfo] = field(default_factory=dict)
    schema: str = SCHEMA_NAME
    schema_version: int = SCHEMA_VERSION


def size_label(size: dict[str, int]) -> str:
    """'4096x4096x4096' for a matmul size; values in the family's dimension order."""
    return "x".join(map(str, size.values()))


def row_id(family: str, variant: str, size: dict[str, int]) -> str:
    """The one stable id of a result row, used in JSON, NVTX-free file names and compare."""
    return f"{family}/{variant}/{size_label(size)}"


def to_dict(results: Results) -> dict[str, Any]:
    data = asdict(results)
    if not data["shard"]:
        del data["shard"]
    del data["families"]
    if results.families:  # before the rows: what describes them comes first in the file
        ordered: dict[str, Any] = {}
        for key, value in data.items():
            if key == "rows":
                ordered["families"] = families_to_dict(results.families)
            ordered[key] = value
        data = ordered
    for row, out in zip(results.rows, data["rows"]):
        out["id"] = row.id
        if not out["warnings"]:
            del out["warnings"]
        for key in ("requires", "replaced_sizes", "input_classes"):  # absent unless there are some
            if not out["check"][key]:
                del out["check"][key]
        out["derived"] = derived_to_dict(row.derived) if row.derived is not None else None
        out["ncu"] = ncu_to_dict(row.ncu) if row.ncu is not None else None
        out["sanitizer"] = sanitizer_to_dict(row.sanitizer) if row.sanitizer is not None else None
        timing = out.get("timing")
        if timing:
            for key in SAMPLE_FIELDS:
                if isinstance(timing.get(key), array):
                    timing[key] = timing[key].tolist()
    return data


def from_dict(data: Any, path: str | Path | None = None) -> Results:
    """Build Results from parsed JSON, upgrading older schema versions; InputError if foreign."""
    where = f"{path}: " if path else ""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise InputError(f"{where}not a gpuprof results file (no \"schema\": \"{SCHEMA_NAME}\")")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError(f"{where}schema_version is missing or not an integer")
    if version > SCHEMA_VERSION:
        raise InputError(
            f"{where}schema_version {version} is newer than this gpuprof reads ({SCHEMA_VERSION}); "
            "upgrade gpuprof"
        )
    data = _upgrade(data, version)
    bad = f"{where}malformed results file: "
    if not isinstance(data.get("rows"), list):
        raise InputError(f"{bad}\"rows\" must be a list of rows, not {_shown(data.get('rows'))}")
    if not isinstance(data.get("environment"), dict):
        raise InputError(f"{bad}\"environment\" must be an object like {{\"gpu_name\": ...}}, "
                         f"not {_shown(data.get('environment'))}")
    for key in ("timing_policy", "compare"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise InputError(f"{bad}\"{key}\" must be an object, not {_shown(data[key])}")
    try:
        rows = []
        shared: dict[Any, Any] = {}  # equal small values of many rows, kept once (_row_from_dict)
        for index, raw in enumerate(data["rows"], 1):
            try:
                rows.append(raw if isinstance(raw, Row) else _row_from_dict(raw, shared))  # Row: made by load
            except KeyError as exc:  # in the file's words, not Python's: "row 3: 'family' is missing"
                raise ValueError(f"row {index}: {exc.args[0]!r} is missing") from None
            except (TypeError, ValueError) as exc:
                raise ValueError(f"row {index}: {exc}") from None
        families = families_from_dict(data.get("families"))
        _check_switches(rows, families)
        return Results(
            environment=dict(data["environment"]),
            rows=rows,
            command=str(data.get("command", "")),
            created_utc=str(data.get("created_utc", "")),
            timing_policy=dict(data.get("timing_policy", {})),
            compare=dict(data.get("compare") or {}),
            shard=checked_shard(data.get("shard")),
            families=families,
        )
    except KeyError as exc:
        raise InputError(f"{where}malformed results file: {exc.args[0]!r} is missing") from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}malformed results file: {exc}") from None


def _check_switches(rows: list[Row], families: dict[str, FamilyInfo]) -> None:
    """A size of 0 only where the row's family (the file's families block) declares that dim a switch."""
    for index, row in enumerate(rows, 1):
        zeros = [key for key, value in row.size.items() if value == 0]
        if not zeros:
            continue
        info = families.get(row.family)
        allowed = set(info.switches) if info is not None else set()
        if not set(zeros) <= allowed:
            raise ValueError(f"row {index}: size.{min(set(zeros) - allowed)} must be a positive integer, not 0")


def families_to_dict(infos: dict[str, FamilyInfo]) -> dict[str, Any]:
    """The "families" block as the file writes it: {"version": N, "by_name": {name: {...}}}."""
    return {"version": FAMILIES_VERSION, "by_name": {name: _family_to_dict(info) for name, info in infos.items()}}


def _family_to_dict(info: FamilyInfo) -> dict[str, Any]:
    return {"summary": info.summary, "rate_kind": info.rate_kind, "formula": info.formula, "dims": list(info.dims),
            "baseline": info.baseline, "vendor_reference": info.vendor_reference, "source": info.source,
            "constraints": list(info.constraints), "switches": list(info.switches),
            "variants": {v.name: {"technique": v.technique, "precision": v.precision, "vendor": v.vendor,
                                  "user": v.user, "constraints": list(v.constraints), "call": v.call}
                         for v in info.variants}}


def families_from_dict(raw: Any) -> dict[str, FamilyInfo]:
    """The file's "families" block, every field's type checked (TypeError / ValueError naming the
    field, which from_dict turns into one line naming the file); absent (files written before the
    block): {}."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TypeError(f"families must be an object like {{\"version\": {FAMILIES_VERSION}, \"by_name\": ...}}, "
                        f"not {_shown(raw)}")
    version = raw.get("version")
    if type(version) is not int or version < 1:
        raise TypeError(f"families.version must be a positive integer, not {_shown(version)}")
    if version > FAMILIES_VERSION:
        raise ValueError(f"families.version {version} is newer than this gpuprof reads ({FAMILIES_VERSION}); "
                         "upgrade gpuprof")
    by_name = raw.get("by_name")
    if not isinstance(by_name, dict):
        raise TypeError(f"families.by_name must be an object of families by name, not {_shown(by_name)}")
    infos = {}
    for name, entry in by_name.items():
        if not name:
            raise ValueError("families.by_name has a family without a name (\"\")")
        infos[name] = _family_from_dict(entry, f"families.{name}")
    return infos


def _family_from_dict(raw: Any, where: str) -> FamilyInfo:
    if not isinstance(raw, dict):
        raise TypeError(f"{where} must be an object like {{\"rate_kind\": \"bytes\", ...}}, not {_shown(raw)}")
    rate_kind = _text(raw.get("rate_kind"), f"{where}.rate_kind")
    if rate_kind not in RATE_KINDS:
        raise ValueError(f"{where}.rate_kind must be one of {', '.join(map(json.dumps, RATE_KINDS))}, "
                         f"not {_shown(rate_kind)}")
    variants_raw = raw.get("variants", {})
    if not isinstance(variants_raw, dict):
        raise TypeError(f"{where}.variants must be an object of variants by name, not {_shown(variants_raw)}")
    variants = []
    for name, entry in variants_raw.items():
        at = f"{where}.variants.{name}"
        if not isinstance(entry, dict):
            raise TypeError(f"{at} must be an object like {{\"precision\": \"fp32\", ...}}, not {_shown(entry)}")
        variants.append(VariantInfo(
            name=str(name),
            technique=_text(entry.get("technique", ""), f"{at}.technique"),
            precision=_text(entry.get("precision", "fp32"), f"{at}.precision"),
            vendor=_flag(entry.get("vendor", False), f"{at}.vendor"),
            user=_flag(entry.get("user", False), f"{at}.user"),
            constraints=_texts(entry.get("constraints", []), f"{at}.constraints"),
            call=None if entry.get("call") is None else _text(entry["call"], f"{at}.call"),
        ))
    vendor_reference = raw.get("vendor_reference")
    return FamilyInfo(
        summary=_text(raw.get("summary", ""), f"{where}.summary"),
        rate_kind=rate_kind,
        formula=_text(raw.get("formula", ""), f"{where}.formula"),
        dims=_texts(raw.get("dims", []), f"{where}.dims"),
        baseline=_text(raw.get("baseline", ""), f"{where}.baseline"),
        vendor_reference=None if vendor_reference is None else _text(vendor_reference, f"{where}.vendor_reference"),
        source=_text(raw.get("source", ""), f"{where}.source"),
        variants=tuple(variants),
        constraints=_texts(raw.get("constraints", []), f"{where}.constraints"),
        switches=_texts(raw.get("switches", []), f"{where}.switches"),
    )


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be text, not {_shown(value)}")
    return value


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be true or false, not {_shown(value)}")
    return value


def _texts(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError(f"{name} must be a list of text like [\"n\"], not {_shown(value)}")
    return tuple(value)


# The "shard" record, checked before merge or show uses it: a hand-edited `"count": 1000000000000`
# cannot make merge count to it, and `"index": [1]` is one line, not a traceback.
# More shards than any suite has units (a suite of 10,000 cases is already far beyond any real one).
MAX_SHARDS = 10_000
MAX_UNITS = 10_000_000


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def checked_shard(value: Any) -> dict[str, Any]:
    """The record as a dict; TypeError or ValueError (the loader's "malformed results file: ...")
    naming the key for a wrong type or a value out of range."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"\"shard\" must be an object, not {value!r:.40}")
    record = dict(value)
    if "index" in record or "count" in record:
        index: Any = record.get("index")
        count: Any = record.get("count")
        if not _whole_number(count) or not 1 <= count <= MAX_SHARDS:
            raise ValueError(f"\"shard\": \"count\" must be a whole number from 1 to {MAX_SHARDS:,}, "
                             f"not {count!r:.40}")
        if not _whole_number(index) or not 1 <= index <= count:
            raise ValueError(f"\"shard\": \"index\" must be a whole number from 1 to its count {count}, "
                             f"not {index!r:.40}")
        units: Any = record.get("units")
        if units is not None and (not _whole_number(units) or not 1 <= units <= MAX_UNITS):  # may be below the count:
            raise ValueError(f"\"shard\": \"units\" must be a whole number from 1 to "  # shards past it ran none
                             f"{MAX_UNITS:,}, not {units!r:.40}")
    order = record.get("order")
    if order is not None:
        if not isinstance(order, dict):
            raise TypeError(f"\"shard\": \"order\" must be an object of row id -> place, not {order!r:.40}")
        bad = next((k for k, v in order.items() if not _whole_number(v) or not 0 <= v <= MAX_UNITS), None)
        if bad is not None:
            raise ValueError(f"\"shard\": \"order\" of {bad!r:.60} must be a whole number from 0 to "
                             f"{MAX_UNITS:,}, not {order[bad]!r:.40}")
    merged = record.get("merged")
    if merged is not None and not (isinstance(merged, list) and all(isinstance(m, dict) for m in merged)):
        raise TypeError(f"\"shard\": \"merged\" must be a list of objects, not {merged!r:.40}")
    return record


def _upgrade(data: dict[str, Any], version: int) -> dict[str, Any]:
    # Each older version gets an _upgrade_vN_to_vN+1 step here; version 1 is the first. A step works
    # on row dicts: load's parse hook (_parsed_object) must then leave an older file's rows as dicts.
    return data


def _shown(value: Any) -> str:
    """A value as the file has it, short: 'null', '"abc"', '[1, 2, …]'."""
    text = json.dumps(value, default=str) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _number(value: Any, name: str, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {_shown(value)}")
    return value


def _count(value: Any, name: str) -> float | None:
    """A work count (FLOP, bytes): a finite number, 0 or more, or absent."""
    number = _number(value, name)
    if number is not None and not (math.isfinite(number) and number >= 0):
        raise ValueError(f"{name} must be a finite number, 0 or more, not {_shown(value)}")
    return number


def _size(value: Any, where: str) -> dict[str, int]:
    if not isinstance(value, dict):  # empty for pytest plugin rows: no size of a family
        raise TypeError(f"{where}: size must be a table like {{\"n\": 1024}}, not {_shown(value)}")
    for key, item in value.items():
        if type(item) is not int or item < 0:  # 0: a family's switch (attention's causal)
            raise ValueError(f"{where}: size.{key} must be an integer, 0 or more, not {_shown(item)}")
    return {str(k): v for k, v in value.items()}


def _check_constraints(check: CheckResult, where: str) -> None:
    """check.requires: a list of strings; check.replaced_sizes: {"asked": size, "checked": size} each."""
    if not isinstance(check.requires, list) or not all(isinstance(c, str) for c in check.requires):
        raise TypeError(f"{where}: check.requires must be a list of conditions, not {_shown(check.requires)}")
    moved = check.replaced_sizes
    if not isinstance(moved, list) or not all(isinstance(m, dict) and set(m) == {"asked", "checked"} for m in moved):
        raise TypeError(f"{where}: check.replaced_sizes must be a list of {{\"asked\": size, \"checked\": size}}, "
                        f"not {_shown(moved)}")
    for m in moved:
        _size(m["asked"], where), _size(m["checked"], where)
    if not isinstance(check.input_classes, list) or not all(isinstance(c, str) for c in check.input_classes):
        raise TypeError(f"{where}: check.input_classes must be a list of class names, "
                        f"not {_shown(check.input_classes)}")


_SUMMARY_FIELDS = ("n", "median_s", "mean_s", "min_s", "max_s", "p25_s", "p75_s", "rel_spread")


def _shared(value: Any, shared: dict[Any, Any]) -> Any:
    """One object for equal strings and {dimension: int} tables across rows (family names, statuses,
    checked sizes): JSON gives every row its own copies, a few MB in an 18k-row file."""
    if type(value) is str:
        return shared.setdefault(value, value)
    if type(value) is dict and len(value) <= 8 and all(type(v) is int for v in value.values()):
        return shared.setdefault(tuple(value.items()), value)
    return value


def _shared_text(text: str, shared: dict[Any, Any]) -> str:
    return shared.setdefault(text, text)


# The keys a file's check and timing objects may have, once (an 18k-row load asked for them per key).
_CHECK_KEYS = frozenset(f.name for f in fields(CheckResult))
_TIMING_KEYS = frozenset(f.name for f in fields(Timing))


def _row_from_dict(r: dict[str, Any], shared: dict[Any, Any] | None = None) -> Row:
    """One row, with every field's type checked: a foreign or hand-edited file fails here, not later.
    shared: equal strings and checked sizes of earlier rows, to reuse (_shared)."""
    if not isinstance(r, dict):
        raise TypeError(f"a row must be an object, not {r!r:.40}")
    shared = {} if shared is None else shared
    where = str(r.get("id") or f"{r.get('family')}/{r.get('variant')}")
    if not isinstance(r["check"], dict) or "status" not in r["check"]:
        raise TypeError(f"{where}: check must be an object like {{\"status\": \"ok\"}}, not {_shown(r['check'])}")
    unknown_check = [key for key in r["check"] if key not in _CHECK_KEYS]
    if unknown_check:
        raise ValueError(f"{where}: check has unknown key {unknown_check[0]!r}")
    check = CheckResult(**r["check"])
    check.status = _shared(check.status, shared)
    if type(check.sizes_checked) is list:
        check.sizes_checked = [_shared(s, shared) for s in check.sizes_checked]
    if check.status not in CHECK_STATUSES:
        raise ValueError(f"{where}: unknown check status {check.status!r}")
    _number(check.max_rel_error, f"{where}: check.max_rel_error")
    _number(check.tolerance, f"{where}: check.tolerance")
    _check_constraints(check, where)
    timing = None
    if r.get("timing") is not None:
        if not isinstance(r["timing"], dict):
            raise ValueError(f"{where}: timing must be an object like {{\"mode\": \"cold\", ...}}")
        t = dict(r["timing"])
        raw_summary = t.pop("summary", None)
        if raw_summary is not None:
            if not isinstance(raw_summary, dict):
                raise TypeError(f"{where}: timing.summary must be an object, not {_shown(raw_summary)}")
            missing = [key for key in _SUMMARY_FIELDS if key not in raw_summary]
            unknown = [key for key in raw_summary if key not in _SUMMARY_FIELDS]
            if missing or unknown:
                raise ValueError(f"{where}: timing.summary " + (f"lacks {', '.join(missing)}" if missing
                                                                 else f"has unknown key {unknown[0]!r}"))
        for key in ("mode", "samples_s", "stop_reason"):
            if key not in t:
                raise ValueError(f"{where}: timing.{key} is missing")
        if t["mode"] not in TIMING_MODES:
            raise ValueError(f"{where}: timing.mode {_shown(t['mode'])} is none of {', '.join(TIMING_MODES)}")
        known = _TIMING_KEYS
        strange = [key for key in t if key not in known]
        if strange:
            raise ValueError(f"{where}: timing has unknown key {strange[0]!r}")
        summary = Summary(**raw_summary) if raw_summary else None
        if summary is not None and not set(map(type, vars(summary).values())) <= _NUMBER_TYPES:
            for key, value in vars(summary).items():  # slow path, for its message
                _number(value, f"{where}: timing.summary.{key}", optional=False)
        timing = Timing(summary=summary, **t)
        timing.mode, timing.stop_reason, timing.note = (
            _shared(timing.mode, shared), _shared(timing.stop_reason, shared), _shared(timing.note, shared))
        for key in SAMPLE_FIELDS:
            samples = getattr(timing, key)
            if isinstance(samples, Samples):
                continue  # _compact_samples made it from a list of numbers only
            # type() rather than _number() per sample: an 18k-row file holds millions of them
            if not isinstance(samples, list) or any(type(s) not in (float, int) for s in samples):
                _number(next((s for s in samples if type(s) not in (float, int)), samples),
                        f"{where}: timing samples", optional=False)
        _check_times(timing.samples_s, where)
        if not isinstance(timing.throttled, list) or not all(isinstance(flag, bool) for flag in timing.throttled):
            raise ValueError(f"{where}: timing.throttled must hold true/false per sample")
        _number(timing.resolution, f"{where}: timing.resolution")
    if not isinstance(r["vendor"], bool):
        raise TypeError(f"{where}: vendor must be true or false, not {r['vendor']!r}")
    if not isinstance(r.get("control", False), bool):
        raise TypeError(f"{where}: control must be true or false, not {r['control']!r}")
    if r.get("gpu") is not None and not isinstance(r["gpu"], dict):
        raise TypeError(f"{where}: gpu must be an object like {{\"index\": 0, \"name\": ...}}")
    kept = r.get("warnings") or []
    if not isinstance(kept, list) or not all(
            isinstance(w, dict) and all(isinstance(v, str) for v in w.values()) for w in kept):
        raise TypeError(f"{where}: warnings must be a list of objects like {{\"library\": \"torch\", "
                        f"\"message\": ...}}, not {_shown(kept)}")
    size = _shared(_size(r["size"], where), shared)  # 18k rows, a few sizes
    for key in ("family", "variant"):
        if not isinstance(r[key], str) or not r[key]:
            raise TypeError(f"{where}: {key} must be a name, not {_shown(r[key])}")
    defines = r.get("defines") or {}
    if not isinstance(defines, dict) or any(type(v) is not int for v in defines.values()):
        raise TypeError(f"{where}: defines must be a table of integers like {{\"BM\": 64}}, not {_shown(defines)}")
    for key in ("precision", "flop_count", "technique"):
        if r.get(key) is not None and not isinstance(r[key], str):
            raise TypeError(f"{where}: {key} must be text, not {_shown(r[key])}")
    if r.get("flop_count", "executed") not in ("executed", "nominal"):
        raise ValueError(f"{where}: flop_count must be \"executed\" or \"nominal\", not {_shown(r['flop_count'])}")
    return Row(
        family=_shared_text(str(r["family"]), shared),
        variant=str(r["variant"]),
        size=size,
        vendor=r["vendor"],
        check=check,
        timing=timing,
        flop=_count(r.get("flop"), f"{where}: flop"),
        bytes=_count(r.get("bytes"), f"{where}: bytes"),
        technique=_shared_text(str(r.get("technique", "")), shared),
        defines={str(k): v for k, v in defines.items()},
        precision=_shared_text(str(r.get("precision", UNKNOWN_PRECISION)), shared),
        flop_count=_shared_text(str(r.get("flop_count", "executed")), shared),
        derived=derived_from_dict(r["derived"], where, shared) if isinstance(r.get("derived"), dict) else None,
        ncu=ncu_from_dict(r["ncu"], where) if r.get("ncu") is not None else None,
        sanitizer=sanitizer_from_dict(r["sanitizer"], where) if r.get("sanitizer") is not None else None,
        control=r.get("control", False),
        gpu=r.get("gpu"),
        warnings=[dict(w) for w in kept],
    )


def _check_times(samples: Sequence[float], where: str) -> None:
    """Every sample a finite time above zero: NaN, infinite, zero or negative times come from a broken
    timer or a hand-edited file, and dropping them would judge a row on the samples left. Two C-level
    passes (min, fsum: NaN or inf make the sum non-finite) rather than a check per sample."""
    if not len(samples):
        return
    try:
        fine = min(samples) > 0 and math.isfinite(math.fsum(samples))
    except OverflowError:
        fine = False
    if not fine:
        index, bad = next((i, s) for i, s in enumerate(samples) if not (math.isfinite(s) and s > 0))
        raise ValueError(f"{where}: timing.samples_s[{index}] is {bad!r}; every sample must be a finite time "
                         "above 0 (a broken timer or a hand-edited file?)")


def derived_to_dict(derived: Derived) -> dict[str, Any]:
    """A row's "derived" as the results file writes it (DERIVED_KEYS)."""
    return {key: getattr(derived, key) for key in DERIVED_KEYS}


def derived_from_dict(raw: dict[str, Any], where: str = "row", shared: dict[Any, Any] | None = None) -> Derived:
    """A row's "derived" from the file, each field's type checked. Files written before the speedups
    were kept lack vs_baseline/vs_vendor (analysis.derive.speedups fills them for a table); older
    ones lack more keys: each missing one is None (rate_kind: "bytes")."""
    shared = {} if shared is None else shared
    values: dict[str, Any] = {}
    for key in DERIVED_KEYS:
        value = raw.get(key)
        if key in _DERIVED_NUMBERS:
            values[key] = _number(value, f"{where}: derived.{key}")
        elif value is not None and not isinstance(value, str):
            raise TypeError(f"{where}: derived.{key} must be text, not {value!r:.40}")
        else:
            values[key] = _shared(value, shared)
    values["rate_kind"] = values["rate_kind"] or "bytes"
    rate, pct = values["rate"], values["pct_of_measured"]
    return Derived(**values, measured_value=100.0 * rate / pct if rate and pct else None)


def save(results: Results, path: str | Path) -> Path:
    """Write the results file atomically (an interrupted run never leaves a broken file)."""
    return atomic_write_text(Path(path), json_parts(results))


def json_parts(results: Results) -> Iterator[str]:
    """The results file's text in pieces: indented, one row per line. json indents through its
    Python encoder, which took 7 s for an 18k-row file and put every sample on a line of its own
    (67 MB where one line per row is 47 MB); rows go through its C encoder."""
    return json_lines(to_dict(results), "rows")


def json_lines(data: dict[str, Any], listed: str, ensure_ascii: bool = True) -> Iterator[str]:
    """`data` as indented JSON, except that each item of the list data[listed] is one compact line."""
    slot = f"\x00{listed}\x00"  # stands in for the list; no path, argv or message holds a NUL
    head, tail = json.dumps({**data, listed: slot}, indent=1, allow_nan=True, ensure_ascii=ensure_ascii).split(
        json.dumps(slot), 1)
    yield head
    items = data[listed]
    if not items:
        yield "[]"
    for index, item in enumerate(items):
        yield ("[\n  " if index == 0 else ",\n  ") + json.dumps(item, allow_nan=True, ensure_ascii=ensure_ascii)
    if items:
        yield "\n ]"
    yield tail


def load(path: str | Path, lean: bool = False) -> Results:
    """The results file at path, every row checked (InputError naming the file and the row).

    A file in the layout gpuprof writes (json_parts: one row per line) is read line by line and each
    row becomes its Row as it is read, so the file's text is never held whole. lean: keep only what
    `compare` needs, for 18k-row files: each row's samples sorted, its SM clocks as a sorted multiset
    (read without parsing every one), and no NVML clocks, throttle flags or checked sizes."""
    path = Path(path)
    collecting = gc.isenabled()
    # Parsing makes hundreds of thousands of containers that all survive and form no cycles: the
    # cyclic collector would only re-walk them again and again (a fifth of an 18k-row load).
    gc.disable()
    try:
        data = _streamed(path, lean)
        if data is None:  # another layout (hand-written, one line): parsed whole
            data = json.loads(read_text(path, gunzip=True), object_hook=functools.partial(_parsed_object, shared={}))
        return from_dict(data, path)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deep to be a results file") from None
    except ValueError as exc:  # an integer of thousands of digits (Python refuses to convert it)
        raise InputError(f"{path}: a number too long to be a measurement ({str(exc).split(':')[0].lower()})") from None
    finally:
        if collecting:
            gc.enable()


_ROWS_OPENER = '"rows": ['


def _streamed(path: Path, lean: bool) -> dict[str, Any] | None:
    """The file parsed row line by row line (json_lines' layout), or None when it has another
    layout or a row line that is not one whole row (then the caller parses the text whole)."""
    head: list[str] = []
    rows: list[Any] = []
    in_rows = False
    shared: dict[Any, Any] = {}
    hook = functools.partial(_parsed_object, shared=shared)
    for line in read_lines(path, gunzip=True):
        if in_rows:
            text = line.strip()
            if text.startswith("{"):
                text = text.removesuffix(",")
                try:
                    rows.append(_lean_row(text, shared, hook) if lean else json.loads(text, object_hook=hook))
                except json.JSONDecodeError:
                    return None
                continue
            in_rows = False
            line = line.replace("]", "[]", 1)
        elif line.strip() == _ROWS_OPENER and not rows:
            in_rows = True
            line = line.replace(_ROWS_OPENER, '"rows": ', 1).rstrip() + " "
        head.append(line)
    if in_rows or not rows:
        return None
    data = json.loads("".join(head))
    if not isinstance(data, dict) or data.get("rows") != []:
        return None
    data["rows"] = rows
    return data


# What a lean load cuts out of each row line before parsing it (compare reads none of it, or, for
# the clocks and derived figures, only a little): (name, opener, closer, what stands in its place).
_LEAN_CUTS = (
    ("nvml", '"nvml_sm_clock_mhz": [', "]", "[]"),
    ("throttled", '"throttled": [', "]", "[]"),
    ("sizes", '"sizes_checked": [', "]", "[]"),
    ("summary", '"summary": {', "}", "null"),
    ("clocks", '"sm_clock_mhz": [', "]", "[]"),
    ("derived", '"derived": {', "}", "null"),
)
_LEAN_GPUS: dict[str, dict[str, Any]] = {}  # one {"name": model} per model, shared by the rows of lean loads


def _lean_cut(text: str) -> tuple[str, dict[str, str]]:
    """The row line without _LEAN_CUTS' lists and objects, joined once (each cut copying the line
    was a fifth of a load), and the text of each one cut, by name. What is cut holds numbers,
    booleans or flat objects: no closer inside; anything else is left for the full parse."""
    spans = []
    for name, opener, closer, empty in _LEAN_CUTS:
        start = text.find(opener)
        if start < 0:
            continue
        begin = start + len(opener)
        end = text.find(closer, begin)
        if end < 0 or (closer == "}" and "{" in text[begin:end]):
            continue
        spans.append((start, end + 1, opener[:-1] + empty, name, begin))
    spans.sort()
    pieces, taken, position = [], {}, 0
    for start, stop, stand_in, name, begin in spans:
        if start < position:  # overlapping cuts: not a row gpuprof wrote; parse it whole
            return text, {}
        pieces += [text[position:start], stand_in]
        taken[name] = text[begin:stop - 1]
        position = stop
    pieces.append(text[position:])
    return "".join(pieces), taken


def _lean_row(line: str, shared: dict[Any, Any], hook: Any) -> Any:
    """One row line, parsed with only what compare needs (load's lean): its samples (sorted), its
    median SM clock (as its one clock: clock_median), check status and reasons, sizes, work,
    precision and rate kind."""
    text, taken = _lean_cut(line)
    raw = json.loads(text)  # no object hook: its call per object cost more than the row's checks
    if isinstance(raw, dict) and isinstance(raw.get("timing"), dict):
        _compact_samples(raw["timing"])
    try:
        row = _row_from_dict(raw, shared)
    except (KeyError, TypeError, ValueError):
        return raw  # from_dict refuses it with its row number
    row.defines = {}  # ncu and sanitizer stay: the counter gate reads them (analysis/counter_gate.py)
    if "derived" in taken:  # only its rate kind: what resource_class reads
        kind = json.loads("{" + taken["derived"] + "}").get("rate_kind")
        row.derived = Derived(kind if isinstance(kind, str) else "bytes")
    if row.gpu is not None:  # the model pairs rows (comparability); its wall times and steps are not needed
        row.gpu = _LEAN_GPUS.setdefault(str(row.gpu.get("name")), {"name": row.gpu.get("name")})
    if row.timing is None:
        return row
    row.timing.summary = None
    if isinstance(row.timing.samples_s, Samples):
        row.timing.samples_s = _sorted(row.timing.samples_s)
    if taken.get("clocks"):
        try:
            median = clock_median(taken["clocks"])
        except ValueError:  # not plain numbers: the full parse says what is wrong
            return json.loads(line, object_hook=hook)
        row.timing.sm_clock_mhz = Samples([median] if median is not None else [])
    return row


def clock_median(listed: str) -> float | None:
    """The median of a row's SM clocks from their JSON text ("1980.0, 1980.0, 1755.0"), as np.median
    of the finite clocks above 0 would give it; None without one. A row has a few distinct clocks:
    only those are parsed."""
    first = listed.split(",", 1)[0]
    if not listed.replace(first, "").replace(",", "").strip():  # every clock the same (the usual case)
        value = float(first)
        return value if math.isfinite(value) and value > 0 else None
    counts: dict[float, int] = {}
    for text, count in collections.Counter(listed.split(",")).items():
        value = float(text)
        if math.isfinite(value) and value > 0:
            counts[value] = counts.get(value, 0) + count
    total = sum(counts.values())
    if not total:
        return None
    ordered = sorted(counts)
    seen, cumulative = 0, []
    for value in ordered:
        seen += counts[value]
        cumulative.append(seen)
    low = ordered[next(i for i, c in enumerate(cumulative) if c > (total - 1) // 2)]
    high = ordered[next(i for i, c in enumerate(cumulative) if c > total // 2)]
    return low if total % 2 else (low + high) / 2


class SortedSamples(Samples):
    """Samples sorted ascending (a lean load's): compare uses them as they are, without a check."""

    __slots__ = ()


def _sorted(samples: Samples) -> SortedSamples:
    import numpy as np  # here: the CLI's fast start imports results without numpy

    ordered = SortedSamples(samples)  # a copy of the buffer (C), then sorted in place
    np.frombuffer(ordered, dtype=float).sort()
    return ordered


_NUMBER_TYPES = {float, int}


def _parsed_object(obj: dict[str, Any], shared: dict[Any, Any]) -> Any:
    """json object_hook: each row becomes its Row as soon as it is parsed, so the file's row dicts
    never all live at once (with them, a second 18k-row file went over 300 MB); a row that does
    not check out stays a dict, for from_dict to refuse with its row number."""
    if "samples_s" in obj and "mode" in obj:
        return _compact_samples(obj)
    if "family" in obj and "check" in obj and "vendor" in obj:
        try:
            return _row_from_dict(obj, shared)
        except (KeyError, TypeError, ValueError):
            return obj
    return obj


def _compact_samples(obj: dict[str, Any]) -> dict[str, Any]:
    """A timing object's per-sample lists of plain numbers become Samples; anything else (a string,
    a bool among them) stays a list for _row_from_dict to reject with its message."""
    if "samples_s" in obj and "mode" in obj:
        for key in SAMPLE_FIELDS:
            values = obj.get(key)
            if type(values) is list and set(map(type, values)) <= _NUMBER_TYPES:
                try:
                    obj[key] = Samples(values)
                except OverflowError:  # an integer beyond float: left for the row check
                    pass
    return obj
