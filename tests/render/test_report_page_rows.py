"""A row's profiler parts on the report page, on demand: stall reasons as a bar, the hottest source
lines with their text, ncu's advice with the limiter's kind first, sanitizer findings with tool, kind,
file:line and source; text from files escaped. From a results file whose rows carry every typed part."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from gpuprof import results
from gpuprof.commands.report import ReportRequest, execute
from gpuprof.render.page_rows import ordered_advice
from gpuprof.render.report_html import page
from gpuprof.row_parts import Advice, Finding, HotLine, NcuPart, SanitizerPart

COMPUTE_ADVICE = Advice("IssueSlotUtilization", "All compute pipelines are under-utilized.", 94.3)
MEMORY_ADVICE = Advice("UncoalescedGlobalAccess", "This kernel has uncoalesced global accesses (8.5 GB of DRAM "
                       "traffic for 0.2 GB of matrices).", 61.0)
HOT = HotLine("tiled_matmul.cu", 32, 46.0, "    sum += sharedA[ty][k] * sharedB[k][tx]; // <script>x</script>",
              {"mio_throttle": 60.0, "short_scoreboard": 25.0})
PART = NcuPart(kernels=1, duration_ns=2.9e6, dram_pct=91.0, sm_pct=12.0, limiter="dram", dram_bytes=3.2e9,
               flop=2.7e8, level_bytes={"l1": 6.4e9, "l2": 4.1e9, "dram": 3.2e9},
               level_peaks={"l1": 3.35e13, "l2": 8.7e12, "dram": 3.35e12}, top_stall="long_scoreboard",
               top_stall_pct=60.0, stalls={"long_scoreboard": 60.0, "lg_throttle": 25.0, "barrier": 10.0,
                                           "not_selected": 5.0},
               hot_lines=(HOT, HotLine("tiled_matmul.cu", 40, 12.0, "", {})),
               advice=(COMPUTE_ADVICE, MEMORY_ADVICE))
RACE = Finding("racecheck", "hazard", "tiled_matmul", "tiled_matmul.cu", 32, "sum += sharedA[ty][k];",
               "Race reported between Write access at tiled_matmul.cu:28 and Read access at tiled_matmul.cu:32")
FOUND = SanitizerPart(verdict="findings", findings=3, first="racecheck: hazard tiled_matmul.cu:32",
                      tools={"memcheck": "clean", "racecheck": "3 findings"}, size={"n": 4097}, found=(RACE,))


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    loaded = results.load(fixtures / "results" / "h100_ci_with.json")
    rows = [replace(r, ncu=PART, sanitizer=FOUND) if r.variant == "grid" else r for r in loaded.rows]
    path = tmp_path_factory.mktemp("parts") / "parts.json"
    results.save(replace(loaded, rows=rows), path)
    return page(execute(ReportRequest(path)))


def grid_details(text: str) -> str:
    found = re.search(r'<details class="row" id="row-vecadd-grid-268435456">.*?</details>', text, re.DOTALL)
    return found.group(0)


def test_the_table_links_to_the_rows_details(text):
    assert 'href="#row-vecadd-grid-268435456"' in text
    assert "<summary>grid · dram-bound · top stall gmem latency · hottest line tiled_matmul.cu:32 · sanitizer: " \
           "findings</summary>" in grid_details(text)


def test_stall_reasons_are_one_bar_in_words(text):
    shown = re.findall(r'class="stall" data-reason="(\w+)" data-pct="([\d.]+)"', grid_details(text))
    assert [(reason, float(pct)) for reason, pct in shown] == [("long_scoreboard", 60.0), ("lg_throttle", 25.0),
                                                               ("barrier", 10.0), ("not_selected", 5.0)]
    assert "gmem latency <b>60 %</b>" in grid_details(text)


def test_hottest_lines_with_their_text_escaped(text):
    details = grid_details(text)
    assert "tiled_matmul.cu:32" in details and "sum += sharedA[ty][k] * sharedB[k][tx];" in details
    assert "&lt;script&gt;x&lt;/script&gt;" in details and "<script>x" not in details
    assert "smem queue 60 %, smem latency 25 %" in details
    assert "(source not in the report)" in details  # line 40 came without its text


def test_memory_advice_first_for_a_memory_bound_row(text):
    details = grid_details(text)
    assert "memory advice first" in details
    assert details.index("UncoalescedGlobalAccess") < details.index("IssueSlotUtilization")
    assert [a.rule for a in ordered_advice(replace(PART, limiter="compute"))] == ["IssueSlotUtilization",
                                                                                  "UncoalescedGlobalAccess"]


def test_sanitizer_findings_with_tool_kind_and_place(text):
    details = grid_details(text)
    finding = re.search(r'<table class="findings">.*?</table>', details, re.DOTALL).group(0)
    for words in ("racecheck", "hazard", "tiled_matmul.cu:32", "sum += sharedA[ty][k];", "Write access at"):
        assert words in finding
    assert "2 more not kept in the file" in details
    assert "3 findings</span>: racecheck hazard at tiled_matmul.cu:32" in text  # the table's cell


def test_the_roofline_places_the_row_at_each_measured_level(text):
    from tests.render.page_svg_reading import SVG, centre, charts, plot, x_value

    vecadd = charts(text, "roofline")[0]
    marks = [m for m in plot(vecadd).iter(f"{SVG}g") if m.attrib.get("data-row") == "vecadd/grid/268435456"]
    levels = {m.attrib["data-level"]: x_value(plot(vecadd), centre(m)[0]) for m in marks}
    assert levels == pytest.approx({"dram": 2.7e8 / 3.2e9, "l2": 2.7e8 / 4.1e9, "l1": 2.7e8 / 6.4e9}, rel=1e-2)


def test_the_l2_and_l1_roofs_are_drawn_and_the_counters_limiter_is_bold(text):
    """The row's ncu part keeps each level's peak: L2 and L1 slopes join DRAM's; the row's limiter
    (DRAM here) is the bold roof, the levels it does not bind are not."""
    from tests.render.page_svg_reading import SVG, charts

    vecadd = charts(text, "roofline")[0]
    roofs = {line.attrib["class"]: line.find(f"{SVG}title").text for line in vecadd.iter(f"{SVG}line")
             if line.attrib.get("class", "").startswith("roof memory")}
    assert set(roofs) == {"roof memory binding", "roof memory l2", "roof memory l1"}
    assert "grid" in roofs["roof memory binding"]
    assert "L1 8.7" not in text and "L2 8.7 TB/s (ncu)" in text and "L1 33.5 TB/s (ncu)" in text
    assert "L1/L2 roofs: not in the results file" not in text


def test_an_l1_bound_row_binds_the_l1_roof(tmp_path):
    from pathlib import Path

    from tests.render.page_svg_reading import SVG, charts

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    loaded = results.load(fixtures / "results" / "h100_ci_with.json")
    rows = [replace(r, ncu=replace(PART, limiter="l1")) if r.variant == "grid" else r for r in loaded.rows]
    path = tmp_path / "l1.json"
    results.save(replace(loaded, rows=rows), path)
    vecadd = charts(page(execute(ReportRequest(path))), "roofline")[0]
    bold = {line.attrib["class"]: line.find(f"{SVG}title").text for line in vecadd.iter(f"{SVG}line")
            if "binding" in line.attrib.get("class", "") and "memory" in line.attrib["class"]}
    assert "binds grid" in bold["roof memory binding l1"]
    # the other rows keep no limiter: the lower of DRAM's slope and the peak binds them
    assert "grid" not in bold["roof memory binding"].split("binds ")[1].split(", ")
