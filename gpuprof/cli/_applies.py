"""Every option applies or is refused: which options each command takes in each of its modes, the
range of every number option, and single-valued options given once (docs/options.md).

One table, read by one check (`check_options`, run by every command before its body): an option
given where it does nothing is exit 2 naming it, never silently ignored. Options a table leaves
out apply in every mode. Ranges are by parameter name, the same for every command that has it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpuprof.errors import UsageError

FAMILY, COMMAND, IMPORT = "family", "command", "import"
TIMED, CHECK_ONLY = "timed", "check-only"
TABLE_VIEW, JSON_ONLY = "table", "json"
RANKED, IN_RANGE = "ranked", "nvtx"  # profile: the timeline picks the kernels, or ncu takes an NVTX range's

# How an error names a mode: "--kernel does not apply with --import".
MODE_WORDS = {FAMILY: "with a FAMILY", COMMAND: "with '-- COMMAND'", IMPORT: "with --import",
              TIMED: "when timing", CHECK_ONLY: "with --check-only", TABLE_VIEW: "with the table",
              JSON_ONLY: "with JSON on stdout (--format json or --json -)",
              RANKED: "when the timeline picks the kernels (without --nvtx)", IN_RANGE: "with --nvtx"}

VARIANT_OPTIONS = ("variants", "size", "define", "add", "block", "tile", "grid", "name", "require", "kernels_dir")


@dataclass(frozen=True)
class Modes:
    """A command's modes: which one a command line is in (from its parsed parameters and the words
    after `--`), and for each option (by parameter name) the modes it applies in."""

    modes: tuple[str, ...]
    mode_of: Callable[[Mapping[str, Any], tuple[str, ...]], str]
    only: Mapping[str, frozenset[str]]


def _target_mode(params: Mapping[str, Any], after_dashes: tuple[str, ...]) -> str:
    if params.get("import_path") is not None or params.get("import_report") is not None:
        return IMPORT
    return COMMAND if after_dashes else FAMILY


def _compare_mode(params: Mapping[str, Any]) -> str:
    return JSON_ONLY if params.get("output_format") == "json" or params.get("json_out") == "-" else TABLE_VIEW


def _in(*modes: str) -> frozenset[str]:
    return frozenset(modes)


def _each(names: tuple[str, ...], modes: frozenset[str]) -> dict[str, frozenset[str]]:
    return dict.fromkeys(names, modes)


APPLIES: dict[str, Modes] = {
    "ncu": Modes((FAMILY, COMMAND, IMPORT), _target_mode, {
        **_each((*VARIANT_OPTIONS, "ladder"), _in(FAMILY)),
        **_each(("kernel", "nvtx_include", "launch_skip", "launch_count", "per_kernel"), _in(COMMAND)),
        **_each(("clock_control", "section", "set_name", "metrics", "out"), _in(FAMILY, COMMAND)),
        "per_launch": _in(COMMAND, IMPORT),  # a family's table is one row per variant already
    }),
    "nsys": Modes((FAMILY, COMMAND, IMPORT), _target_mode, {
        **_each((*VARIANT_OPTIONS, "count"), _in(FAMILY)),
        "timeout": _in(FAMILY, COMMAND),  # an import runs only `nsys stats`, not the program
    }),
    "sanitize": Modes((FAMILY, COMMAND, IMPORT), _target_mode, {
        **_each((*VARIANT_OPTIONS, "jobs", "no_skip"), _in(FAMILY)),
        **_each(("tool", "out", "sanitizer", "leak_check"), _in(FAMILY, COMMAND)),
    }),
    "run": Modes((TIMED, CHECK_ONLY), lambda params, _: CHECK_ONLY if params.get("check_only") else TIMED, {
        **_each(("timing", "min_samples", "max_time", "target_spread", "discard_throttled"), _in(TIMED)),
    }),
    # with --nvtx, ncu profiles every kernel inside the range: no ranking to limit or cover
    "profile": Modes((RANKED, IN_RANGE), lambda params, _: IN_RANGE if params.get("nvtx") is not None else RANKED,
                     {**_each(("top", "cover"), _in(RANKED))}),
    "compare": Modes((TABLE_VIEW, JSON_ONLY), lambda params, _: _compare_mode(params), {"wide": _in(TABLE_VIEW)}),
}


@dataclass(frozen=True)
class Range:
    """A number option's allowed values, said as the error says them."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False  # low itself is not allowed
    high_open: bool = False
    words: str = ""

    def holds(self, value: float) -> bool:
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return self.high is None or not (value > self.high or (self.high_open and value == self.high))


def _at_least(low: int, words: str) -> Range:
    return Range(low=low, words=words)


_POSITIVE_SECONDS = Range(low=0, low_open=True, words="a positive number of seconds")
_FRACTION = Range(low=0, high=1, low_open=True, high_open=True, words="a fraction between 0 and 1, e.g. 0.005")

# By parameter name, for every command that has it (tests/cli/test_option_rules.py checks that every
# number option of every command is here).
RANGES: dict[str, Range] = {
    "timeout": _POSITIVE_SECONDS,
    "compile_timeout": _POSITIVE_SECONDS,
    "max_time": _POSITIVE_SECONDS,
    "target_spread": _FRACTION,
    "min_samples": _at_least(1, "at least 1"),
    "count": _at_least(1, "at least 1"),
    "warmup": _at_least(0, "0 or more"),
    "jobs": _at_least(1, "at least 1"),
    "launch_skip": _at_least(0, "0 or more"),
    "launch_count": _at_least(1, "at least 1"),
    "per_kernel": _at_least(0, "0 or more (0: every launch)"),
    "source_lines": _at_least(1, "at least 1"),
    "top": _at_least(1, "at least 1"),
    "cover": Range(low=0, high=100, low_open=True, words="a percentage above 0 and at most 100"),
}


def option_name(param: Any) -> str:
    """The option as the user types it: its longest flag ('--launch-skip'), or its metavar for an argument."""
    opts = getattr(param, "opts", None) or [param.name]
    return max(opts, key=len)


def check_options(command: str, params: Mapping[str, Any], given: set[str], after_dashes: tuple[str, ...],
                  names: Mapping[str, str]) -> None:
    """UsageError for the first option that does not apply in this command line's mode, or whose
    number is out of range. given: the parameters the user typed; names: parameter -> '--option'."""
    modes = APPLIES.get(command)
    if modes is not None:
        mode = modes.mode_of(params, after_dashes)
        for name in sorted(given, key=lambda n: list(names).index(n) if n in names else 0):
            allowed = modes.only.get(name)
            if allowed is not None and mode not in allowed:
                goes = " or ".join(MODE_WORDS[m] for m in sorted(allowed))
                raise UsageError(f"{names.get(name, name)} does not apply {MODE_WORDS[mode]} "
                                 f"(it goes {goes}); leave it out")
    for name in given:
        value = params.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        option = names.get(name, name)
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{option} {value}: give a finite number")
        rule = RANGES.get(name)
        if rule is not None and not rule.holds(value):
            raise UsageError(f"{option} {value:g}: give {rule.words}")
