"""The compare gate's settings, pure: the presets' thresholds (min effect, alpha, min samples) and
what else fails the gate (`--fail-on`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gpuprof.analysis.order_stats import fewest_samples_for
from gpuprof.errors import UsageError


@dataclass(frozen=True)
class ComparePolicy:
    """Thresholds of one preset; validated so that every preset can actually reach a decision.

    min_effect: relative change of the median that matters (0.02 = 2 %); smaller changes are SAME.
    alpha: significance level of Mann–Whitney; the median-ratio interval has level 1 - alpha.
    min_samples: fewest samples per side before any decision (fewer gives INCONCLUSIVE).
    """

    name: str
    min_effect: float
    alpha: float
    min_samples: int

    def __post_init__(self) -> None:
        if not 0.001 <= self.min_effect <= 0.5:
            raise UsageError(f"min effect {self.min_effect} is outside 0.001..0.5 (0.02 means 2 %)")
        if not 1e-6 <= self.alpha <= 0.2:
            raise UsageError(f"alpha {self.alpha} is outside 1e-6..0.2")
        fewest = fewest_samples_for(self.alpha)
        if self.min_samples < fewest:
            raise UsageError(
                f"min samples {self.min_samples} is too small for alpha {self.alpha}: "
                f"a median interval at that level needs at least {fewest} samples"
            )


PRESETS: dict[str, ComparePolicy] = {
    p.name: p
    for p in (
        ComparePolicy("default", min_effect=0.02, alpha=0.01, min_samples=10),
        ComparePolicy("strict", min_effect=0.01, alpha=0.05, min_samples=8),
        ComparePolicy("permissive", min_effect=0.05, alpha=0.001, min_samples=12),
    )
}


def policy_for(name: str) -> ComparePolicy:
    try:
        return PRESETS[name]
    except KeyError:
        raise UsageError(f"unknown compare preset {name!r} (choices: {', '.join(PRESETS)})") from None


class FailOn(StrEnum):
    """What else, besides SLOWER and newly WRONG rows, fails the gate (`--fail-on`)."""

    UNTIMED = "untimed"  # timed in BASE, no samples in NEW (e.g. a new host sync): on by default
    TOO_FEW = "too-few-samples"  # fewer samples than the preset's minimum on a side: on by default
    INCONCLUSIVE = "inconclusive"  # the gate could not decide (overlapping, tests disagree)
    MISSING = "missing"  # removed or resized rows, and rows SKIPPED in NEW for environment reasons
    CONTROL = "control"  # a control row that moved alone (a finding about the control, not the run)
    RUN_SHIFT = "run-shift"  # run-shift=PCT: the whole run (or a resource class) more than PCT % slower
    COUNTERS = "counters"  # a deterministic counter of `--with ncu` grew past its limit (analysis/counter_gate.py)


DEFAULT_FAIL_ON: frozenset[FailOn] = frozenset({FailOn.UNTIMED, FailOn.TOO_FEW})


def parse_fail_on(text: str | None) -> frozenset[FailOn]:
    """'inconclusive,missing' adds to the default (untimed, too-few-samples); 'none' clears it
    ('none,missing': missing only); 'run-shift=3' adds the run-shift rule (run_shift_limit)."""
    if not text:
        return DEFAULT_FAIL_ON
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    chosen = set() if "none" in words else set(DEFAULT_FAIL_ON)
    for word in words:
        if word == "none":
            continue
        if word.split("=", 1)[0] == FailOn.RUN_SHIFT:
            run_shift_limit(word)  # checked here, so a bad value is refused whoever parses it
            chosen.add(FailOn.RUN_SHIFT)
            continue
        try:
            chosen.add(FailOn(word))
        except ValueError:
            raise UsageError(f"--fail-on {word!r}: choose from {', '.join(f.value for f in FailOn)}=PCT "
                             "or none") from None
    return frozenset(chosen)


def run_shift_limit(text: str | None) -> float | None:
    """The PCT of 'run-shift=PCT' in a --fail-on value, as a fraction (3 -> 0.03); None without it."""
    for word in (w.strip().lower() for w in (text or "").split(",")):
        name, _, value = word.partition("=")
        if name != FailOn.RUN_SHIFT:
            continue
        try:
            pct = float(value.strip().removesuffix("%"))
        except ValueError:
            raise UsageError(f"--fail-on {word!r}: give the largest whole-run slowdown that passes, in percent, "
                             "e.g. run-shift=3") from None
        if not 0 <= pct <= 100:
            raise UsageError(f"--fail-on {word!r}: the percentage must be between 0 and 100")
        return pct / 100
    return None
