"""`gpuprof report --html`: the page's structure from recorded H100 results: contents and headline,
linear ladders with error bars and the vendor as a reference line, rooflines at the measured
intensities, size sweeps, throttled samples, the gate with --base; nothing fetched."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from gpuprof import results
from gpuprof.analysis.speedup_summary import geometric_mean
from gpuprof.cli import app
from gpuprof.commands.report import ReportRequest, execute
from gpuprof.render.page_headline import headline
from gpuprof.render.report_html import page
from gpuprof.results import WRONG
from gpuprof.row_parts import NcuPart, SanitizerPart
from tests.render.page_svg_reading import SVG, centre, charts, plot, x_value, y_value


class Structure(HTMLParser):
    """Each family section's charts by class, every id and link, and anything that would be fetched."""

    def __init__(self) -> None:
        super().__init__()
        self.families: dict[str, list[str]] = {}
        self.family: str | None = None
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.external: list[str] = []
        self.chart: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "section" and attrs.get("class") == "family":
            self.family = attrs["id"].removeprefix("family-")
            self.families[self.family] = []
        if tag == "div" and "chart" in (attrs.get("class") or ""):
            self.chart = attrs["class"].split()[1]
        if tag == "svg" and self.chart and self.family:
            self.families[self.family].append(self.chart)
            self.chart = None
        if attrs.get("href", "").startswith("#"):
            self.links.append(attrs["href"][1:])
        elif attrs.get("href") or attrs.get("src"):
            self.external.append(attrs.get("href") or attrs["src"])
        if tag in ("link", "img", "iframe", "object") or tag == "script" and attrs.get("src"):
            self.external.append(tag)


def parsed(text: str) -> Structure:
    parser = Structure()
    parser.feed(text)
    return parser


@pytest.fixture(scope="module")
def course(fixtures_dir_module):
    story = execute(ReportRequest(fixtures_dir_module / "results" / "h100_course_a.json.gz"))
    return story, page(story)


@pytest.fixture(scope="module")
def with_ncu(fixtures_dir_module):
    story = execute(ReportRequest(fixtures_dir_module / "results" / "h100_ci_with.json"))
    return story, page(story)


@pytest.fixture(scope="module")
def fixtures_dir_module():
    from pathlib import Path

    return Path(__file__).resolve().parents[1] / "fixtures"


def test_every_family_has_its_ladders_and_a_roofline_and_nothing_is_fetched(fixtures_dir):
    text = page(execute(ReportRequest(fixtures_dir / "results" / "smoke_a.json")))
    found = parsed(text)
    assert list(found.families) == ["vecadd", "matmul"]
    for drawn in found.families.values():
        assert drawn == ["ladder", "roofline"]
    assert found.external == []  # self-contained: nothing to fetch when opened
    assert "Compare gate" not in text and text.count("How the figures are computed") == 2  # contents + heading


def test_the_contents_links_resolve_to_ids(course):
    _, text = course
    found = parsed(text)
    assert found.links and set(found.links) <= found.ids
    contents = re.search(r'<nav class="toc".*?</nav>', text, re.DOTALL).group(0)
    for family in ("vecadd", "matmul", "histogram", "fft", "fused", "transfers", "mnist"):
        assert f'href="#family-{family}"' in contents


def test_the_headline_is_the_best_rungs_against_their_vendor_not_every_rung(course):
    story, text = course
    headline = re.search(r'<h2 id="headline">.*?</p>', text, re.DOTALL).group(0)
    best_per_family = []
    for family, tables in story.families().items():
        table = max((t for t in tables if t.vendor), key=lambda t: max(math.prod(r.size.values()) for r in t.rows))
        rungs = [r for r in table.rows if not r.vendor and r.check.status == "ok" and r.derived.rate]
        best = max(rungs, key=lambda r: r.derived.rate)
        best_per_family.append(best.derived.vs_vendor)
        assert f"{family}: best rung {best.variant} " in headline
        assert f"{best.derived.vs_vendor:.3g}× {table.vendor}" in headline
    expected = geometric_mean(best_per_family)
    assert f"<b>{expected:.3g}×</b>" in headline and "7 families" in headline
    assert story.run.vs_vendor is not None and f"{story.run.vs_vendor:.3g}×" not in headline  # not every rung


def test_ladders_are_linear_with_error_bars_and_the_vendor_as_a_reference_line(with_ncu):
    story, text = with_ncu
    ladders = charts(text, "ladder")
    assert len(ladders) == len(story.report.tables)
    for svg, table in zip(ladders, story.report.tables):
        area = plot(svg)
        low, _high, kind = area.attrib["data-x"].split()
        assert kind == "lin" and float(low) == 0.0
        rungs = [g.attrib["data-row"] for g in area.iter(f"{SVG}g") if g.attrib.get("class") == "rung"]
        assert rungs == [r.id for r in table.rows if not r.vendor]  # no vendor bar among the rungs
        references = [g.attrib.get("data-row") for g in area.iter(f"{SVG}g")
                      if g.attrib.get("class", "").startswith("reference") and g.attrib.get("data-row")]
        assert references == [r.id for r in table.rows if r.vendor]
        scale = 1e12 if table.rate_kind == "flop" else 1e9
        bars = [g for g in area.iter(f"{SVG}g") if g.attrib.get("class") == "errorbar"]
        assert len(bars) == len(rungs)
        for bar, row in zip(bars, [r for r in table.rows if not r.vendor]):
            s = row.timing.summary
            assert float(bar.attrib["data-low"]) == pytest.approx(row.derived.rate * s.median_s / s.p75_s / scale)
            assert float(bar.attrib["data-high"]) == pytest.approx(row.derived.rate * s.median_s / s.p25_s / scale)
            assert float(bar.attrib["data-low"]) <= row.derived.rate / scale <= float(bar.attrib["data-high"])


def test_each_rung_is_explained_from_its_counters(with_ncu):
    _, text = with_ncu
    (matmul,) = [svg for svg in charts(text, "ladder") if "matmul" in svg.find(f"{SVG}title").text]
    steps = {g.attrib["data-row"].split("/")[1]: "".join(t.text for t in g.iter(f"{SVG}text")
                                                         if "step" in t.attrib.get("class", ""))
             for g in matmul.iter(f"{SVG}g") if g.attrib.get("class") == "rung"}
    assert steps["naive"].startswith("first rung")
    assert "time ×0.45" in steps["warptile"] and "limiter latency → compute: 70 % of the FP32 roof" in steps["warptile"]
    assert "DRAM bytes ×0.08" in steps["blocktile_2d"] and "registers 32 → 130" in steps["blocktile_2d"]


def test_without_counters_a_rung_is_explained_by_its_technique(course):
    story, text = course
    (vecadd,) = [svg for svg in charts(text, "ladder") if "vecadd" in svg.find(f"{SVG}title").text]
    techniques = {r.variant: r.technique for r in story.report.results.rows if r.family == "vecadd"}
    shown = [t.text for t in vecadd.iter(f"{SVG}text") if "step technique" == t.attrib.get("class")]
    capped = [words for words in shown if words.startswith("at 65536 (its size is capped) · ")]
    assert len(capped) == 1  # one_thread ran at a smaller size than the rest of its table
    shown = [words.split("(its size is capped) · ")[-1].rstrip("…") for words in shown]
    assert shown and all(any(words in techniques[v] for v in techniques) for words in shown)


def test_roofline_points_sit_at_the_measured_intensities(with_ncu):
    story, text = with_ncu
    rooflines = charts(text, "roofline")
    assert len(rooflines) == 2
    rows = {r.id: r for r in story.report.results.rows}
    seen = set()
    for svg in rooflines:
        assert "placed by measured bytes (ncu)" in svg.find(f"{SVG}title").text
        area = plot(svg)
        for mark in area.iter(f"{SVG}g"):
            if "point" not in mark.attrib.get("class", ""):
                continue
            row = rows[mark.attrib["data-row"]]
            cx, cy = centre(mark)
            assert mark.attrib["data-level"] == "dram"
            assert x_value(area, cx) == pytest.approx(row.ncu.flop / row.ncu.dram_bytes, rel=1e-2)
            assert y_value(area, cy) * 1e12 == pytest.approx(row.flop / row.timing.summary.median_s, rel=1e-2)
            seen.add(row.variant)
    assert seen == {r.variant for r in rows.values()}
    matmul = rooflines[1]
    naive = next(m for m in plot(matmul).iter(f"{SVG}g") if m.attrib.get("data-row") == "matmul/naive/4096x4096x4096")
    assert x_value(plot(matmul), centre(naive)[0]) == pytest.approx(16.1, rel=1e-2)  # not the model's 682
    binding = [line for line in matmul.iter(f"{SVG}line") if "binding" in line.attrib.get("class", "")]
    assert {line.attrib["class"] for line in binding} == {"roof memory binding", "roof compute binding"}
    assert "naive" in "".join(line.find(f"{SVG}title").text for line in binding if "memory" in line.attrib["class"])


def test_without_counters_the_roofline_says_it_uses_the_model(course):
    story, text = course
    matmul = next(svg for svg in charts(text, "roofline") if svg.find(f"{SVG}title").text.startswith("matmul"))
    assert "placed by matmul's model" in matmul.find(f"{SVG}title").text
    rows = {r.id: r for r in story.report.results.rows}
    for mark in plot(matmul).iter(f"{SVG}g"):
        if "point" in mark.attrib.get("class", ""):
            row = rows[mark.attrib["data-row"]]
            assert x_value(plot(matmul), centre(mark)[0]) == pytest.approx(row.flop / row.bytes, rel=1e-2)


def test_transfers_are_judged_against_the_host_link_not_dram(course):
    _, text = course
    transfers = next(svg for svg in charts(text, "roofline") if svg.find(f"{SVG}title").text.startswith("transfers"))
    words = " ".join(t.text or "" for t in transfers.iter(f"{SVG}text"))
    assert "host link" in words and "DRAM" not in words and "TFLOP" not in words


def test_a_family_with_nothing_to_plot_gets_one_line_not_an_empty_frame(fixtures_dir, tmp_path):
    loaded = results.load(fixtures_dir / "results" / "h100_course_a.json.gz")
    failed = [replace(r, check=replace(r.check, status=WRONG, reasons=["max error 3e-01"]), derived=None)
              if r.family == "mnist" else r for r in loaded.rows]
    path = tmp_path / "mnist_wrong.json"
    results.save(replace(loaded, rows=failed), path)
    text = page(execute(ReportRequest(path)))
    section = re.search(r'<section class="family" id="family-mnist">.*?</section>', text, re.DOTALL).group(0)
    assert "<svg" not in section.replace('<svg class="stallbar"', "")
    assert "No roofline for mnist: no row passed its check" in section
    assert section.count("No ladder: no rung of this table has a rate (1 WRONG)") == 2


def test_sizes_are_drawn_as_rate_against_size_lines(course):
    _, text = course
    fft = next(svg for svg in charts(text, "sweep") if svg.find(f"{SVG}title").text.startswith("fft"))
    lines = {g.attrib["data-variant"]: len(list(g.iter(f"{SVG}circle"))) for g in fft.iter(f"{SVG}g")
             if g.attrib.get("class") == "line"}
    assert lines == {"naive": 3, "smem": 3, "fourstep": 3, "cufft": 3}
    assert not any(svg.find(f"{SVG}title").text.startswith("matmul") for svg in charts(text, "sweep"))  # one size


def test_throttled_samples_are_shown_as_the_terminal_shows_them(fixtures_dir):
    story = execute(ReportRequest(fixtures_dir / "results" / "h100_course.json"))
    text = page(story)
    throttled = [r for r in story.report.results.rows if r.timing and r.timing.throttled_count]
    assert throttled
    for row in throttled:
        words = f"{row.timing.throttled_count}/{len(row.timing.throttled)} throttled"
        on_ladder = not row.vendor and row.derived is not None and row.derived.rate
        assert text.count(words) >= (2 if on_ladder else 1)  # in the table, and beside the rung's bar


def test_with_base_the_gate_verdict_per_row_and_the_trend(fixtures_dir):
    story = execute(ReportRequest(fixtures_dir / "results" / "smoke_b.json", fixtures_dir / "results" / "smoke_a.json"))
    text = page(story)
    assert "Compare gate" in text and "PASS" in text and 'href="#gate"' in text
    gate = re.search(r'<h2 id="gate">.*?</table>', text, re.DOTALL).group(0)
    assert len(re.findall(r"<circle ", gate)) == len(story.gate.verdicts)  # one trend mark per compared row
    assert "vs BASE" in text


def test_the_ncu_and_sanitizer_cells_read_as_words(with_ncu):
    _, text = with_ncu
    assert "top stall: lg_throttle; duration ns" not in text  # no key dump
    assert "stalls on <span title=\"too many global/local memory instructions queued (LSU full)\">gmem queue</span>" \
        " 93 %" in text
    assert "8.53 GB from DRAM" in text and ">clean</span>" in text


def test_ncu_and_sanitizer_columns_only_when_rows_have_them(fixtures_dir, tmp_path):
    loaded = results.load(fixtures_dir / "results" / "smoke_a.json")
    ncu = NcuPart(limiter="dram", registers=32, top_stall="long_scoreboard", top_stall_pct=71.0)
    clean = SanitizerPart(verdict="clean", tools={"memcheck": "clean", "racecheck": "skipped: no shared memory"})
    rows = [replace(r, ncu=ncu, sanitizer=clean) if r.variant == "grid" else r for r in loaded.rows]
    path = tmp_path / "with_ncu.json"
    results.save(replace(loaded, rows=rows), path)
    text = page(execute(ReportRequest(path)))
    assert text.count("ncu: why") == 1 and "<b>dram-bound</b>" in text
    assert text.count("<th class=\"l\">sanitizer</th>") == 1 and ">clean<" in text
    plain = page(execute(ReportRequest(fixtures_dir / "results" / "smoke_a.json")))
    assert "ncu: why" not in plain and "sanitizer</th>" not in plain


def test_report_cli_writes_the_page_and_pngs(runner, fixtures_dir, tmp_path):
    pytest.importorskip("matplotlib")
    out, pngs = tmp_path / "r.html", tmp_path / "charts"
    done = runner.invoke(app, ["report", str(fixtures_dir / "results" / "smoke_a.json"), "--html", str(out),
                               "--png", str(pngs)])
    assert done.exit_code == 0, done.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in pngs.iterdir()) == ["matmul_2048x2048x2048_ladder.png", "matmul_roofline.png",
                                                       "vecadd_67108864_ladder.png", "vecadd_roofline.png"]
    again = runner.invoke(app, ["report", str(fixtures_dir / "results" / "smoke_a.json"), "--html", str(out)])
    assert again.exit_code == 0  # our own page is replaced without --force
    for argv, words in ((["report", str(fixtures_dir / "results" / "smoke_a.json")], "--html"),
                        (["report", str(out), "--html", str(tmp_path / "x.html")], "not valid JSON"),
                        (["report", str(fixtures_dir / "results" / "smoke_a.json"), "--html", str(tmp_path / "y.html"),
                          "--base", str(fixtures_dir / "results" / "smoke_a.json")], "itself")):
        bad = runner.invoke(app, argv)
        assert bad.exit_code == 2 and words in bad.stderr, (argv, bad.stderr)


def test_geomeans_of_the_recorded_matmul_ladder(fixtures_dir):
    story = execute(ReportRequest(fixtures_dir / "results" / "h100_matmul_all.json"))
    rows = {r.variant: r for r in story.report.results.rows}
    rungs = ["smem_tiled", "multistage", "swizzled", "warptile"]  # passed, not vendor, not the baseline
    product = 1.0
    for name in rungs:
        product *= rows[name].derived.vs_baseline
    assert story.speedups[0].vs_baseline == pytest.approx(product ** (1 / 4))
    assert story.speedups[0].vs_baseline_n == 4 and story.speedups[0].vs_vendor_n == 5
    assert story.speedups[0].best.variant == "warptile"


def test_a_suite_sweep_is_drawn_as_bars_fastest_first_with_the_vendor_line(fixtures_dir, tmp_path):
    loaded = results.load(fixtures_dir / "results" / "smoke_a.json")
    matmul = [r for r in loaded.rows if r.family == "matmul" and not r.vendor and r.check.status == "ok"]
    swept = [replace(r, variant=f"tiled[BK={8 * (i + 1)}]", defines={"BK": 8 * (i + 1)}) for i, r in enumerate(matmul)]
    path = tmp_path / "swept.json"
    results.save(replace(loaded, rows=[r for r in loaded.rows if r not in matmul] + swept), path)
    text = page(execute(ReportRequest(path)))
    (sweep,) = [svg for svg in charts(text, "sweep") if "sweep of tiled" in svg.find(f"{SVG}title").text]
    rates = [float(t.text.split()[0]) for t in sweep.iter(f"{SVG}text") if (t.text or "").endswith("TFLOP/s")
             and "vendor" not in t.text]
    assert len(rates) == len(swept) and rates == sorted(rates, reverse=True)
    assert any(line.attrib.get("class") == "reference" for line in sweep.iter(f"{SVG}line"))


def test_a_recorded_run_with_ncu_places_each_level_at_its_measured_bytes(fixtures_dir_module):
    """h200_matmul_with.json (`run matmul --with ncu,sanitize` on the H200, per-level bytes in each
    row): every row has a DRAM, an L2 and an L1 point, each at FLOP / that level's bytes."""
    story = execute(ReportRequest(fixtures_dir_module / "results" / "h200_matmul_with.json"))
    text = page(story)
    rows = {r.id: r for r in story.report.results.rows}
    (roofline,) = charts(text, "roofline")
    area = plot(roofline)
    placed: dict[tuple[str, str], float] = {}
    for mark in area.iter(f"{SVG}g"):
        if "point" in mark.attrib.get("class", ""):
            row = rows[mark.attrib["data-row"]]
            level = mark.attrib["data-level"]
            measured = row.ncu.dram_bytes if level == "dram" else row.ncu.level_bytes[level]
            assert x_value(area, centre(mark)[0]) == pytest.approx(row.ncu.flop / measured, rel=1e-2)
            placed[(row.variant, level)] = measured
    assert {variant for variant, _ in placed} == {r.variant for r in rows.values()}
    assert {level for _, level in placed} == {"dram", "l2", "l1"}
    naive = rows["matmul/naive/2048x2048x2048"]
    assert naive.ncu.limiter == "l1" and "l1-bound" in text.lower()
    assert "kernels/matmul/naive.cu:18" in text  # its hottest line, with its text


def test_a_headline_ratio_over_throttled_samples_says_so(fixtures_dir_module):
    """The re-recorded course: every cuBLAS BF16 sample was clock-capped, so gemm_bf16's 1.1x is
    marked as no clean comparison; vecadd's rows were not capped and carry no caveat."""
    story = execute(ReportRequest(fixtures_dir_module / "results" / "h100_course.json"))
    cards = {card.family: card for card in headline(story).best}
    assert "cublas: 1000/1000 throttled" in cards["gemm_bf16"].throttled
    assert cards["vecadd"].throttled == ""
    assert "the ratio is not a clean comparison" in page(story)
