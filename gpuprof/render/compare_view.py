"""Compare reports as a Rich table, a GitHub step summary (Markdown) and a JSON verdict list."""

from __future__ import annotations

import json
from dataclasses import asdict

from rich.table import Table
from rich.text import Text

from gpuprof.analysis.compare import CompareReport, Status, Verdict, gate
from gpuprof.render import units

# Worst first, so a reader meets the failures before the noise.
_ORDER = {Status.WRONG: 0, Status.SLOWER: 1, Status.INCONCLUSIVE: 2, Status.FASTER: 3, Status.SAME: 4}
_STYLE = {
    Status.WRONG: "bold red",
    Status.SLOWER: "bold red",
    Status.INCONCLUSIVE: "yellow",
    Status.FASTER: "green",
    Status.SAME: "dim",
}
_HEADERS = ("row", "verdict", "base", "new", "change", "CI of change", "p", "reason")


def render_compare_table(report: CompareReport, hide_same: bool = False) -> Table:
    """hide_same leaves SAME rows out of the table (the caption still counts them): a terminal
    view of 18k unchanged rows helps nobody and takes Rich minutes to lay out."""
    shown = [v for v in _ordered(report.verdicts) if not (hide_same and v.status is Status.SAME)]
    hidden = len(report.verdicts) - len(shown)
    caption = _counts_line(report) + (f"; {hidden} SAME rows not shown (--json and --markdown list them)" if hidden else "")
    table = Table(title=f"{report.base_label} → {report.new_label}  ({_policy_line(report)})",
                  caption=caption, title_justify="left", caption_justify="left")
    for header in _HEADERS:
        table.add_column(header, justify="right" if header in ("base", "new", "change", "p") else "left")
    for v in shown:
        table.add_row(*_cells(v, Text(v.status.value, style=_STYLE[v.status])))
    return table


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
    lines += [f"- **fails:** {_md(f)}" for f in failures] + ([""] if failures else [])
    lines += [f"> ⚠️ {_md(w)}" for w in report.warnings] + ([""] if report.warnings else [])
    changed = [v for v in _ordered(report.verdicts) if v.status is not Status.SAME]
    same = [v for v in report.verdicts if v.status is Status.SAME]
    if changed:
        lines += _md_table(changed) + [""]
    if same:
        lines += [f"<details><summary>{len(same)} rows SAME</summary>", "", *_md_table(same), "", "</details>", ""]
    for label, ids in (("Added", report.added), ("Removed", report.removed)):
        if ids:
            lines += [f"**{label}:** " + ", ".join(f"`{i}`" for i in ids), ""]
    return "\n".join(lines)


def compare_json(report: CompareReport) -> str:
    failures = gate(report)
    data = {
        "schema": "gpuprof.analysis.compare",
        "schema_version": 1,
        "base": report.base_label,
        "new": report.new_label,
        "policy": asdict(report.policy),
        "passed": not failures,
        "failures": failures,
        "counts": {str(s): n for s, n in report.counts().items()},
        "verdicts": [asdict(v) for v in report.verdicts],
        "added": report.added,
        "removed": report.removed,
        "warnings": report.warnings,
    }
    return json.dumps(data, indent=1, ensure_ascii=False)


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


def _md_table(verdicts: list[Verdict]) -> list[str]:
    lines = ["| " + " | ".join(_HEADERS) + " | detail |", "|" + "---|" * (len(_HEADERS) + 1)]
    for v in verdicts:
        cells = [f"`{v.row_id}`", f"**{v.status.value}**", *_cells(v, "")[2:], v.detail]
        lines.append("| " + " | ".join(_md(str(c)) for c in cells) + " |")
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _change(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


def _interval(v: Verdict) -> str:
    if v.ci_low is None or v.ci_high is None:
        return "-"
    return f"{_change(v.ci_low)} … {_change(v.ci_high)}"


def _p(p_value: float | None) -> str:
    return "-" if p_value is None else f"{p_value:.2g}"
