"""Suite files (suites/*.toml): load and validate them into Suite and SuiteCase, with sweeps expanded."""

from __future__ import annotations

import difflib
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gpuprof.analysis.compare_presets import PRESETS
from gpuprof.errors import InputError
from gpuprof.files import read_toml

SUITE_SCHEMA = 1
TIMING_MODES = ("cold", "hot", "graph", "cupti")
# Timing keys and the check each value must pass; the runner fills anything left out.
TIMING_KEYS = {
    "mode": "one of " + ", ".join(TIMING_MODES),
    "max_time_s": "a positive number of seconds",
    "min_samples": "a positive integer",
    "max_samples": "a positive integer",
    "target_spread": "a number between 0 and 1 (0.005 = 0.5 %)",
    "target_resolution": "a number between 0 and 1 (0.01 = the median known to ±1 %)",
    "resolution_budget_s": "a positive number of seconds",
}
TOP_KEYS = ("schema", "name", "timing", "compare", "kernels_dir", "case", "sweep")
CASE_KEYS = ("family", "variants", "sizes", "timing", "control")
SWEEP_KEYS = ("family", "variant", "params", "size", "timing")
# The stop rule aims at the median known to ± this fraction of the compare preset's min effect.
GATE_RESOLUTION_FRACTION = 0.4
# One sweep is a parameter study, not a benchmark farm: beyond this it is almost surely a typo.
MAX_SWEEP_CASES = 1024
MAX_DIMENSION = 2**31 - 1  # the kernels index with 32-bit integers (as --size checks)
_DEFINE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class SuiteCase:
    """One family with its variants and sizes (None: the family's default sizes).

    timing holds only this case's overrides (see Suite.case_timing); defines are -D values set
    by a [[sweep]]; control marks rows that the project's code does not change (compare estimates
    whole-run shifts from them, as from vendor rows).
    """

    family: str
    variants: list[str] | Literal["all"]
    sizes: list[dict[str, int]] | None = None
    timing: dict[str, Any] = field(default_factory=dict)
    defines: dict[str, int] = field(default_factory=dict)
    control: bool = False


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    timing: dict[str, Any]
    compare_preset: str
    cases: list[SuiteCase]
    kernels_dir: Path | None = None  # more variants (DIR/<family>.toml), resolved against the suite's folder

    def case_timing(self, case: SuiteCase) -> dict[str, Any]:
        """The suite's timing policy with the case's overrides on top; unless the suite sets
        target_resolution itself, sampling aims to resolve its compare preset's min effect."""
        return {**self.gate_timing(), **self.timing, **case.timing}

    def gate_timing(self) -> dict[str, Any]:
        """The stop rule's gate target from the compare preset: the median known to ± 0.4 x min effect.

        A gate verdict combines four such medians (the row and a control, in BASE and NEW), so its
        interval is about twice as wide as one median's: 0.8 x min effect. A change of 2.5 x the min
        effect (5 % for the default preset) then clears the band in >= 95 % of runs
        (benchmarks/gate_simulation.py).
        """
        preset = PRESETS[self.compare_preset]
        return {"target_resolution": round(preset.min_effect * GATE_RESOLUTION_FRACTION, 6),
                "resolution_alpha": preset.alpha}


def load_suite(
    path: str | Path,
    known: Mapping[str, Sequence[str]] | None = None,
    size_keys: Mapping[str, Sequence[str]] | None = None,
    extra_known: Callable[[Path], Mapping[str, Sequence[str]]] | None = None,
    switches: Mapping[str, Sequence[str]] | None = None,
) -> Suite:
    """Read and validate a suite file; every problem is an InputError naming the file and the place.

    known maps family -> variant names and size_keys family -> size keys (both from the catalogue);
    when given they are checked here, so a typo fails before any GPU work starts. extra_known(DIR)
    names the variants a suite's kernels_dir adds, per family; switches maps family -> its dims that are
    0 or 1 (every other size key is a positive integer).
    """
    path = Path(path)
    data = _read_toml(path)
    return _Validator(path, known, size_keys, extra_known, switches).suite(data)


def _read_toml(path: Path) -> dict[str, Any]:
    return read_toml(path, "suite")


class _Validator:
    """Walks the parsed TOML once; `where` names the table being checked in every message."""

    def __init__(self, path: Path, known: Mapping[str, Sequence[str]] | None,
                 size_keys: Mapping[str, Sequence[str]] | None,
                 extra_known: Callable[[Path], Mapping[str, Sequence[str]]] | None = None,
                 switches: Mapping[str, Sequence[str]] | None = None) -> None:
        self.path = path
        self.switches = switches or {}
        self.known = known
        self.size_keys = size_keys
        self.extra_known = extra_known

    def fail(self, where: str, why: str) -> InputError:
        return InputError(f"{self.path}: {where}: {why}" if where else f"{self.path}: {why}")

    def suite(self, data: dict[str, Any]) -> Suite:
        self.keys("", data, TOP_KEYS)
        self.schema(data.get("schema"))
        name = data.get("name", self.path.stem)
        if not isinstance(name, str) or not name:
            raise self.fail("", f"'name' must be a non-empty string, got {name!r}")
        timing = self.timing("timing", data.get("timing", {}))
        preset = self.compare(data.get("compare", {}))
        kernels_dir = self.kernels_dir(data.get("kernels_dir"))
        cases = [self.case(f"case {i}", c) for i, c in enumerate(self.tables("case", data), 1)]
        for i, sweep in enumerate(self.tables("sweep", data), 1):
            cases.extend(self.sweep(f"sweep {i}", sweep))
        if not cases:
            raise self.fail("", "no [[case]] or [[sweep]] tables; a suite needs at least one")
        return Suite(name=name, path=self.path, timing=timing, compare_preset=preset, cases=cases,
                     kernels_dir=kernels_dir)

    def kernels_dir(self, value: Any) -> Path | None:
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise self.fail("", f"'kernels_dir' must be a folder path (relative to the suite file), got {value!r}")
        directory = (self.path.parent / value).resolve()
        if not directory.is_dir():
            raise self.fail("", f"'kernels_dir' {value!r} is not a folder next to the suite ({directory.name} missing)")
        if self.known is not None and self.extra_known is not None:
            extra = self.extra_known(directory)
            self.known = {f: [*names, *extra.get(f, [])] for f, names in self.known.items()}
        return directory

    def schema(self, value: Any) -> None:
        if value is None:
            raise self.fail("", f"missing 'schema = {SUITE_SCHEMA}' at the top")
        if not _is_int(value):
            raise self.fail("", f"'schema' must be an integer, got {value!r}")
        if value > SUITE_SCHEMA:
            raise self.fail("", f"schema {value} is newer than this gpuprof reads ({SUITE_SCHEMA}); upgrade gpuprof")
        if value != SUITE_SCHEMA:
            raise self.fail("", f"unknown schema {value} (this gpuprof reads schema {SUITE_SCHEMA})")

    def keys(self, where: str, table: dict[str, Any], allowed: Sequence[str]) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"expected one of: {', '.join(allowed)}"
                raise self.fail(where, f"unknown key {key!r} ({hint})")

    def tables(self, key: str, data: dict[str, Any]) -> list[dict[str, Any]]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
            raise self.fail("", f"'{key}' must be written as [[{key}]] tables")
        return value

    def timing(self, where: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be a table like {{ mode = \"cold\", max_time_s = 2.0 }}, got {value!r}")
        self.keys(where, value, tuple(TIMING_KEYS))
        for key, item in value.items():
            if not _timing_value_ok(key, item):
                raise self.fail(where, f"'{key}' must be {TIMING_KEYS[key]}, got {item!r}")
        return dict(value)

    def compare(self, value: Any) -> str:
        if not isinstance(value, dict):
            raise self.fail("compare", f"must be a table like {{ preset = \"default\" }}, got {value!r}")
        self.keys("compare", value, ("preset",))
        preset = value.get("preset", "default")
        if preset not in PRESETS:
            raise self.fail("compare", f"unknown preset {preset!r} (choices: {', '.join(PRESETS)})")
        return preset

    def case(self, where: str, table: dict[str, Any]) -> SuiteCase:
        self.keys(where, table, CASE_KEYS)
        family = self.family(where, table.get("family"))
        variants = table.get("variants", "all")
        if variants != "all":
            if not isinstance(variants, list) or not variants or not all(isinstance(v, str) and v for v in variants):
                raise self.fail(where, f"'variants' must be a non-empty list of names or \"all\", got {variants!r}")
            if len(set(variants)) != len(variants):
                raise self.fail(where, f"'variants' lists a name twice: {variants!r}")
            for variant in variants:
                self.variant(where, family, variant)
        sizes = None if "sizes" not in table else self.sizes(where, family, table["sizes"])
        timing = self.timing(f"{where}: timing", table.get("timing", {}))
        control = table.get("control", False)
        if not isinstance(control, bool):
            raise self.fail(where, f"'control' must be true or false, got {control!r}")
        return SuiteCase(family=family, variants=variants, sizes=sizes, timing=timing, control=control)

    def sweep(self, where: str, table: dict[str, Any]) -> list[SuiteCase]:
        self.keys(where, table, SWEEP_KEYS)
        family = self.family(where, table.get("family"))
        variant = table.get("variant")
        if not isinstance(variant, str) or not variant:
            raise self.fail(where, f"'variant' must be one variant name, got {variant!r}")
        self.variant(where, family, variant)
        params = self.params(where, table.get("params"))
        sizes = None if "size" not in table else [self.size(where, family, table["size"], "'size'")]
        timing = self.timing(f"{where}: timing", table.get("timing", {}))
        count = math.prod(len(values) for values in params.values())  # before building them: 10^10 would not fit
        if count > MAX_SWEEP_CASES:
            raise self.fail(where, f"'params' expand to {count} cases (at most {MAX_SWEEP_CASES}); narrow them")
        combos = list(itertools.product(*params.values()))
        return [
            SuiteCase(family=family, variants=[variant], sizes=sizes, timing=timing,
                      defines=dict(zip(params, combo)))
            for combo in combos
        ]

    def params(self, where: str, value: Any) -> dict[str, list[int]]:
        example = "like { BM = [64, 128], TM = [4, 8] }"
        if not isinstance(value, dict) or not value:
            raise self.fail(where, f"'params' must be a table of integer lists {example}, got {value!r}")
        for name, values in value.items():
            if not _DEFINE_NAME.fullmatch(name):
                raise self.fail(where, f"'params' name {name!r} is not a valid C macro name")
            if not isinstance(values, list) or not values or not all(_is_int(v) for v in values):
                raise self.fail(where, f"'params.{name}' must be a non-empty list of integers {example}")
        return value

    def family(self, where: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"'family' must be a family name, got {value!r}")
        if self.known is not None and value not in self.known:
            raise self.fail(where, f"unknown family {value!r} (known: {', '.join(sorted(self.known))})")
        return value

    def variant(self, where: str, family: str, variant: str) -> None:
        if self.known is not None and variant not in self.known[family]:
            raise self.fail(where, f"unknown {family} variant {variant!r} (known: {', '.join(self.known[family])})")

    def sizes(self, where: str, family: str, value: Any) -> list[dict[str, int]]:
        if not isinstance(value, list) or not value or not all(isinstance(s, dict) for s in value):
            raise self.fail(where, f"'sizes' must be a list of tables like [{self.size_example(family)}] "
                                   "(leave it out for the family's default sizes)")
        sizes = [self.size(where, family, s, f"'sizes' entry {i}") for i, s in enumerate(value, 1)]
        if any(s.keys() != sizes[0].keys() for s in sizes):
            raise self.fail(where, "every entry of 'sizes' must have the same keys")
        return sizes

    def size(self, where: str, family: str, value: Any, what: str) -> dict[str, int]:
        example = self.size_example(family)
        if not isinstance(value, dict) or not value:
            raise self.fail(where, f"{what} must be a table like {example}, got {value!r}")
        expected = self.size_keys.get(family) if self.size_keys else None
        if expected is not None and set(value) != set(expected):
            raise self.fail(where, f"{what} has keys {sorted(value)}; {family} sizes are {example}")
        for key, item in value.items():
            if key in self.switches.get(family, ()):
                if not _is_int(item) or item not in (0, 1):
                    raise self.fail(where, f"{what}: '{key}' is a switch, 0 or 1, got {item!r}")
                continue
            if not _is_int(item) or item <= 0:
                raise self.fail(where, f"{what}: '{key}' must be a positive integer, got {item!r}")
            if item > MAX_DIMENSION:
                raise self.fail(where, f"{what}: '{key}' = {item} is over the kernels' 32-bit index limit (2^31 - 1)")
        return dict(value)

    def size_example(self, family: str) -> str:
        keys = (self.size_keys or {}).get(family) or ["n"]
        return "{" + ", ".join(f"{k} = …" for k in keys) + "}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _timing_value_ok(key: str, value: Any) -> bool:
    if key == "mode":
        return value in TIMING_MODES
    if key in ("min_samples", "max_samples"):
        return _is_int(value) and value > 0
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    return value > 0 if key.endswith("_s") else 0 < value < 1
