"""Compare reports as a Rich table, a GitHub step summary (Markdown), a JSON verdict list and
github-action-benchmark's customSmallerIsBetter JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sized
from dataclasses import asdict, fields

from rich.table import Table
from rich.text import Text

from gpuprof.analysis.compare import UNDECIDED, CompareReport, Reason, Status, Verdict, file_problems, gate
from gpuprof.analysis.compare_presets import FailOn
from gpuprof.render import units
from gpuprof.render.fit import Column, fitted_table
from gpuprof.render.safe_text import visible
from gpuprof.results import json_lines

# Worst first, so a reader meets the failures before the noise.
_ORDER = {Status.WRONG: 0, Status.SLOWER: 1, Status.INCONCLUSIVE: 2, Status.FASTER: 3, Status.SAME: 4}
_STYLE = {
    Status.WRONG: "bold red",
    Status.SLOWER: "bold red",
    Status.INCONCLUSIVE: "yellow",
    Status.FASTER: "green",
    Status.SAME: "dim",
}
# What each column is worth at a narrow width: 0 always shown, higher dropped first.
_COLUMNS = (
    Column("row", 0, "left"), Column("verdict", 0, "left"), Column("base", 2), Column("new", 2),
    Column("change", 0), Column("CI of change", 1, "left"), Column("p", 4),
    Column("reason", 3, "left", "reason: why each row got its verdict (--json and --markdown give it)"),
)
_HEADERS = tuple(column.header for column in _COLUMNS)  # the Markdown table's, in the same order


def render_compare_table(report: CompareReport, hide_same: bool = False, width: int | None = None,
                         max_rows: int | None = None) -> Table:
    """hide_same leaves SAME rows out of the table (the caption still counts them): a terminal
    view of 18k unchanged rows helps nobody and takes Rich minutes to lay out. max_rows: at most
    this many rows, the worst first (a real 18k-row compare had 3,700 changed rows: seconds of
    layout for a screen nobody reads to the end).

    width: the console's; columns that do not fit are left out (the caption names them) rather
    than squeezed (at 100 columns a long row id folded 'SLOWER' into 'SLOWE/R'); None: every column."""
    changed = [v for v in _ordered(report.verdicts) if not (hide_same and v.status is Status.SAME)]
    shown = changed[:max_rows] if max_rows is not None else changed
    hidden_same, cut = len(report.verdicts) - len(changed), len(changed) - len(shown)
    notes = ([f"{hidden_same} SAME rows not shown (--json and --markdown list them)"] if hidden_same else [])
    notes += ([f"{cut} more changed rows not shown, the least bad ones (--json and --markdown list them)"]
              if cut else [])
    rows = [list(_cells(v, Text(v.status.value, style=_STYLE[v.status]))) for v in shown]
    return fitted_table(list(_COLUMNS), rows, width,
                        title=f"{report.base_label} → {report.new_label}  ({_policy_line(report)})",
                        caption="\n".join([*verdict_lines(report), *notes]))


def compare_markdown(report: CompareReport) -> str:
    """A GitHub step summary: the headline, what fails, the rows that changed, the rest folded away."""
    failures = gate(report)
    headline = "❌ regression" if failures else "✅ no regression"
    lines = [
        f"## gpuprof compare: {headline}",
        "",
        f"`{report.base_label}` → `{report.new_label}` · {_policy_line(report)}",
        "",
        _counts_line(report),
        "",
    ]
    lines += [f"- {_md(line)}" for line in verdict_lines(report)] + [""]
    lines += [f"- **fails:** {_md(f)}" for f in failures] + ([""] if failures else [])
    lines += [f"> ⚠️ {_md(w)}" for w in report.warnings] + ([""] if report.warnings else [])
    changed = [v for v in _ordered(report.verdicts) if v.status is not Status.SAME]
    same = [v for v in report.verdicts if v.status is Status.SAME]
    if changed:
        lines += _md_table(changed, report) + [""]
    if same:
        lines += [f"<details><summary>{len(same)} rows SAME</summary>", "", *_md_table(same, report), "",
                  "</details>", ""]
    for label, ids in (("Added", report.added), ("Removed", report.removed)):
        if ids:
            lines += [f"**{label}:** " + ", ".join(f"`{i}`" for i in ids), ""]
    return visible("\n".join(lines))  # names from results files: control and bidi characters as escapes


def compare_json(report: CompareReport) -> str:
    return "".join(compare_json_parts(report))


def compare_json_parts(report: CompareReport) -> Iterator[str]:
    """The report as indented JSON in pieces, with one verdict per line (results.json_lines): an
    18k-row report stays grep-able, is encoded in a fraction of a second, and a file written piece
    by piece never holds the whole text (tens of MB) at once."""
    failures = gate(report)
    data = {
        "schema": "gpuprof.compare",
        "schema_version": 2,  # 2: ratio is relative to the row's class shift; resource, run_shift classes/findings
        "base": report.base_label,
        "new": report.new_label,
        "policy": asdict(report.policy),
        "passed": not failures,
        "failures": failures,
        "counts": {str(s): n for s, n in report.counts().items()},
        "verdicts": [{name: getattr(v, name) for name in _VERDICT_FIELDS} for v in report.verdicts],
        "added": report.added,
        "removed": report.removed,
        "resized": [list(pair) for pair in report.resized],
        "coarse": [v.row_id for v in report.coarse()],
        "fail_on": sorted(f.value for f in report.fail_on),
        "run_shift": {**asdict(report.shift), "ratio": report.shift.ratio if report.shift.estimated else None,
                      "summary": report.shift.describe(), "lines": report.shift.lines(),
                      "fail_limit": report.run_shift_limit},
        "history": None if report.history is None else {
            "runs": report.history.runs, "sigma": report.history.sigma, "dof": report.history.dof,
            "row_sigma": report.history.row_sigma},
        "summary": verdict_lines(report),
        "warnings": report.warnings,
        "counters": [{**asdict(c), "growth": c.growth, "line": c.line()} for c in report.counters],
        "new_findings": [{**asdict(f), "line": f.line()} for f in report.findings],
    }
    yield from json_lines(data, "verdicts", ensure_ascii=False)


_VERDICT_FIELDS = tuple(f.name for f in fields(Verdict))


def verdict_lines(report: CompareReport) -> list[str]:
    """What was compared and what each group means for the gate, one line per non-empty group."""
    c = report.counts()
    fail_on = report.fail_on
    relative = " (relative to the run shift)" if report.shift.estimated else ""
    lines = [f"the gate fails: {problem}" for problem in file_problems(report)]
    lines += [(f"{c[Status.SAME] + c[Status.FASTER] + c[Status.SLOWER]} rows compared{relative}: "
               f"{c[Status.SLOWER]} SLOWER (fail), {c[Status.FASTER]} FASTER, {c[Status.SAME]} SAME"),
              *report.shift.lines()]
    if FailOn.RUN_SHIFT in fail_on and report.run_shift_limit is not None:
        over = report.shift.over_limit(report.run_shift_limit)
        lines += over or [f"run shift within the {report.run_shift_limit * 100:g} % that --fail-on run-shift allows"]
    h = report.history
    if h is not None and h.sigma is not None:
        lines.append(f"history: {h.runs} BASE runs; run-to-run spread {h.sigma * 100:.2f} % (pooled, {h.dof} "
                     f"degrees of freedom) widens every interval by ±{h.widening(report.policy.alpha) * 100:.1f} %")
    by_reason = {r: [v for v in report.verdicts if v.reason is r] for r in Reason}
    undecided = [v for v in report.verdicts if v.status is Status.INCONCLUSIVE and v.reason in UNDECIDED]
    few = by_reason[Reason.TOO_FEW_SAMPLES]
    groups: list[tuple[Sized, str, bool, str]] = [
        (few, f"with too few samples to judge (preset {report.policy.name} needs {report.policy.min_samples} a side)",
         FailOn.TOO_FEW in fail_on, "--fail-on none lets them pass"),
        (undecided, "INCONCLUSIVE: the gate could not decide (take more samples)",
         FailOn.INCONCLUSIVE in fail_on, "--fail-on inconclusive makes them fail"),
        (by_reason[Reason.UNTIMED_IN_NEW], "timed in BASE but no samples in NEW (a host sync? a hang?)",
         FailOn.UNTIMED in fail_on, "--fail-on none lets them pass"),
        (by_reason[Reason.NEWLY_WRONG], "newly WRONG: ok in BASE, wrong in NEW", True, ""),
        (by_reason[Reason.CONTROL_MOVED], "control rows that moved alone (findings, named above)",
         FailOn.CONTROL in fail_on, "--fail-on control makes them fail"),
        (by_reason[Reason.WRONG_RESULT], "still wrong (not ok in BASE either)", False, "not a new failure"),
        (by_reason[Reason.BASE_WRONG], "fixed since BASE (wrong there, so no baseline time)", False, ""),
        (by_reason[Reason.SKIPPED_IN_NEW], "SKIPPED in NEW for environment reasons (not a wrong result)",
         FailOn.MISSING in fail_on, "--fail-on missing makes them fail"),
        (report.added_only, "added: no baseline, not judged", False, ""),
        (report.removed_only, "removed: in BASE only, not judged", FailOn.MISSING in fail_on,
         "--fail-on missing makes them fail"),
        (report.resized, "resized: same variant at another size, not compared", FailOn.MISSING in fail_on,
         "--fail-on missing makes them fail"),
    ]
    for items, what, fails, hint in groups:
        if items:
            effect = "fail the gate" if fails else "pass" + (f"; {hint}" if hint else "")
            lines.append(f"{len(items)} {what}: {effect}")
    if report.findings:
        lines.append(f"{len(report.findings)} rows with sanitizer findings new in {report.new_label}: fail the gate")
        lines += [f"  {f.line()}" for f in report.findings[:5]]
    if report.counters:
        effect = "fail the gate" if FailOn.COUNTERS in fail_on else "pass; --fail-on counters makes them fail"
        lines.append(f"{len(report.counters)} counters of `--with ncu` grew past their limit: {effect}")
        lines += [f"  {c.line()}" for c in report.counters[:5]]
        if len(report.counters) > 5:
            lines.append(f"  … and {len(report.counters) - 5} more (--json lists them)")
    coarse = report.coarse()
    if coarse:
        worst = max(v.resolution or 0.0 for v in coarse)
        lines.append(f"{len(coarse)} rows resolve only ±{worst * 100:.1f} % or worse, coarser than the "
                     f"±{report.policy.min_effect * 100:g} % min effect: they cannot be called SAME "
                     "(time longer: the suite's compare preset makes the stop rule aim for it)")
    return lines


def gab_json(report: CompareReport) -> str:
    """github-action-benchmark's 'customSmallerIsBetter' list: one entry per NEW row timed, in µs."""
    from gpuprof.files import GAB_MARK

    verdicts = {v.row_id: v for v in report.verdicts}
    entries = []
    for rid, median_s in report.new_medians.items():
        entry: dict = {"name": rid, "unit": "us", "value": round(median_s * 1e6, 4)}
        v = verdicts.get(rid)
        if v is not None and v.ci_low is not None and v.ci_high is not None and v.ratio:
            half = max(v.ci_high - v.ratio, v.ratio - v.ci_low) / v.ratio
            entry["range"] = f"± {half * 100:.2f} %"
        # "extra" ends with gpuprof's mark (files.is_own: the format has no other place for one)
        entry["extra"] = (f"{v.status.value} ({v.reason.value}) vs {report.base_label}" if v is not None
                          else "new row") + GAB_MARK
        entries.append(entry)
    return json.dumps(entries, indent=1, ensure_ascii=False)


def trend(values: list[float | None]) -> str:
    """A sparkline of medians, oldest first ('▁▃█'); '·' where a run did not time the row."""
    bars = "▁▂▃▄▅▆▇█"
    known = [v for v in values if v is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    if high <= low * 1.005:  # flat within 0.5 %: noise, drawn as a level line
        return "".join("▄" if v is not None else "·" for v in values)
    return "".join("·" if v is None else bars[round((v - low) / (high - low) * (len(bars) - 1))] for v in values)


def _ordered(verdicts: list[Verdict]) -> list[Verdict]:
    return sorted(verdicts, key=lambda v: _ORDER[v.status])


def _policy_line(report: CompareReport) -> str:
    p = report.policy
    return f"preset {p.name}: min effect {p.min_effect * 100:g} %, alpha {p.alpha:g}, ≥{p.min_samples} samples"


def _counts_line(report: CompareReport) -> str:
    parts = [f"{n} {status.lower()}" for status, n in report.counts().items()]
    parts += [f"{len(report.added)} added", f"{len(report.removed)} removed"]
    return " · ".join(parts)


def _cells(v: Verdict, status: Text | str) -> tuple:
    return (v.row_id, status, units.seconds(v.base_median_s), units.seconds(v.new_median_s), _change(v.ratio),
            _interval(v), _p(v.p_value), v.reason.value)


def _md_table(verdicts: list[Verdict], report: CompareReport) -> list[str]:
    """With history, a trend column: the row's median in each BASE run, then NEW."""
    history = report.history
    headers = [*_HEADERS, *(["trend"] if history else []), "detail"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for v in verdicts:
        cells = [f"`{v.row_id}`", f"**{v.status.value}**", *_cells(v, "")[2:]]
        if history:
            cells.append(trend([*history.medians.get(v.row_id, [None] * history.runs),
                                report.new_medians.get(v.row_id)]))
        cells.append(v.detail)
        lines.append("| " + " | ".join(_md(str(c)) for c in cells) + " |")
    return lines


def _md(text: str) -> str:
    """A Markdown table cell: '|' escaped, on one line, control and bidi characters as escapes."""
    return visible(" ".join(text.replace("|", "\\|").split()), newlines=False)


def _change(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


def _interval(v: Verdict) -> str:
    if v.ci_low is None or v.ci_high is None:
        return "-"
    return f"{_change(v.ci_low)} … {_change(v.ci_high)}"


def _p(p_value: float | None) -> str:
    return "-" if p_value is None else f"{p_value:.2g}"
