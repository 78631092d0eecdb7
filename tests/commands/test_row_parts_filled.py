"""The fields of a row's parts beyond the first ones (issue 35), filled by row_story from what the
run already has: bytes per memory level, the whole stall breakdown, the binding roof and ncu's advice
from recorded H100 reports; the hottest lines from the report's per-line data; typed sanitizer
findings from recorded compute-sanitizer logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.analysis import ladder
from gpuprof.commands import row_story
from gpuprof.commands.sanitize import SanitizeResult
from gpuprof.commands.sanitize_sources import SourceLine
from gpuprof.parsers.sanitizer_log import parse_log
from gpuprof.row_parts import LEVEL_KEYS, MAX_FOUND
from gpuprof.variants.catalog import LIMITERS
from tests.ncu_full_reports import kernel_rows, report_path, requires_ncu_report

TOOLS = Path(__file__).resolve().parents[1] / "fixtures" / "tools"


@requires_ncu_report
@pytest.mark.parametrize("kernel", ["matmul_naive", "matmul_tiled", "matmul_warptile"])
def test_levels_stalls_limiter_and_advice_agree_with_the_numbers_the_row_had(kernel):
    launch = kernel_rows()[kernel]
    part = row_story.ncu_summary([launch])
    assert set(part.level_bytes) == set(LEVEL_KEYS)
    # DRAM bytes two ways: the roofline's rate times the launch's duration, and dram__bytes.sum
    assert part.level_bytes["dram"] == pytest.approx(part.dram_bytes, rel=0.02)
    assert part.level_bytes["l1"] > 0 and part.level_bytes["l2"] > 0
    # each level's roof: ncu's peak bandwidth, faster nearer the SM (H100: DRAM 3.35 TB/s)
    assert set(part.level_peaks) == set(LEVEL_KEYS)
    assert part.level_peaks["l1"] > part.level_peaks["l2"] > part.level_peaks["dram"] > 1e12
    assert part.stalls and sum(part.stalls.values()) == pytest.approx(100.0)
    assert part.top_stall == max(part.stalls, key=lambda r: part.stalls[r])
    assert part.top_stall_pct == pytest.approx(part.stalls[part.top_stall])
    measured = ladder.measured_limiter(kernel, [launch])
    assert measured is not None and part.limiter == measured.limiter and part.limiter in LIMITERS
    assert 0 < len(part.advice) <= row_story.MAX_ADVICE
    assert all(a.kind in ("OPT", "WRN") and a.rule and a.message for a in part.advice)
    assert all(". " not in a.message for a in part.advice)  # the first sentence only
    speedups = [a.speedup_pct or 0.0 for a in part.advice]
    assert speedups == sorted(speedups, reverse=True)


@requires_ncu_report
def test_the_hot_lines_come_from_the_reports_per_line_samples():
    from gpuprof.tools.ncu import read_sources_isolated

    report = report_path("plain_matmul_lineinfo")
    rows = [r for r in kernel_rows().values() if r.kernel_name == "matmul_naive"]
    sources = [s for s in read_sources_isolated(report) if s.kernel_id == rows[0].id]
    part = row_story.ncu_summary(rows, sources)
    assert 0 < len(part.hot_lines) <= row_story.HOT_LINES
    shares = [h.share_pct for h in part.hot_lines]
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 100.0 + 1e-9
    top = part.hot_lines[0]
    assert top.file.endswith(".cu") and top.line > 0 and top.text
    assert top.stalls and sum(top.stalls.values()) == pytest.approx(100.0)
    assert row_story.ncu_summary(rows).hot_lines == ()  # without the per-line data: none, the rest as before


def test_sanitizer_findings_are_typed_with_their_place_and_source_line():
    summary = parse_log((TOOLS / "sanitizer_2025.3.1_memcheck_oob_write_lineinfo.txt").read_text(), tool="memcheck")
    result = SanitizeResult("vecadd/oob_write", "memcheck", list(summary.findings), summary.error_count)
    result.sources[("app.cu", 59)] = SourceLine("kernels/app.cu", 59, "out[i] = 1;")
    part = row_story.sanitizer_summary([result], {})
    assert part.verdict == "findings" and 0 < len(part.found) <= MAX_FOUND
    first = part.found[0]
    assert (first.tool, first.place, first.text) == ("memcheck", "kernels/app.cu:59", "out[i] = 1;")
    assert first.kernel.startswith("oob_write") and first.kind and first.message and "\n" not in first.message


def test_racecheck_findings_keep_their_place_without_a_readable_file():
    summary = parse_log((TOOLS / "sanitizer_2025.3.1_racecheck_hazard_report.txt").read_text(), tool="racecheck")
    result = SanitizeResult("matmul/a", "racecheck", list(summary.findings), summary.error_count,
                            warning_count=summary.warning_count)
    part = row_story.sanitizer_summary([result], {})
    assert part.found and len(part.found) == min(MAX_FOUND, len(summary.findings))
    assert all(f.tool == "racecheck" and f.file and f.line and f.text == "" for f in part.found)
