"""`gpuprof report`: the page's structure from recorded H100 results (every table a ladder SVG, every
family a roofline, the gate with --base, nothing fetched), and a headless-Chromium screenshot where
Chromium is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from gpuprof import results
from gpuprof.cli import app
from gpuprof.commands.report import ReportRequest, execute
from gpuprof.render.report_html import page, sanitizer_verdict
from gpuprof.row_parts import NcuPart, SanitizerPart

pytest.importorskip("matplotlib")


class Sections(HTMLParser):
    """Each family section's charts, by their class."""

    def __init__(self) -> None:
        super().__init__()
        self.families: dict[str, list[str]] = {}
        self.family: str | None = None
        self.external: list[str] = []
        self.chart: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and attrs.get("class") == "family":
            self.family = attrs["id"].removeprefix("family-")
            self.families[self.family] = []
        if tag == "div" and "chart" in (attrs.get("class") or ""):
            self.chart = attrs["class"].split()[1]
        if tag == "svg" and self.chart and self.family:
            self.families[self.family].append(self.chart)
            self.chart = None
        for key in ("src", "href"):
            if attrs.get(key):
                self.external.append(attrs[key])
        if tag in ("script", "link", "img", "iframe"):
            self.external.append(tag)


def parsed(text: str) -> Sections:
    parser = Sections()
    parser.feed(text)
    return parser


def test_every_family_has_a_ladder_per_table_and_a_roofline(fixtures_dir):
    story = execute(ReportRequest(fixtures_dir / "results" / "smoke_a.json"))
    text = page(story)
    sections = parsed(text)
    assert list(sections.families) == ["vecadd", "matmul"]
    for charts in sections.families.values():
        assert charts == ["ladder", "roofline"]
    assert sections.external == []  # self-contained: nothing to fetch when opened
    assert "geomean" in text and "Compare gate" not in text
    for row in story.report.results.rows:
        assert f">{row.variant}" in text
    assert text.count("How the figures are computed") == 1


def test_with_base_the_gate_verdict_per_row_and_the_trend(fixtures_dir):
    story = execute(ReportRequest(fixtures_dir / "results" / "smoke_b.json", fixtures_dir / "results" / "smoke_a.json"))
    text = page(story)
    assert "Compare gate" in text and "PASS" in text
    assert len(re.findall(r"<circle ", text)) == len(story.gate.verdicts)  # one trend mark per compared row
    assert "vs BASE" in text


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


def test_ncu_and_sanitizer_columns_only_when_rows_have_them(fixtures_dir, tmp_path):
    loaded = results.load(fixtures_dir / "results" / "smoke_a.json")
    ncu = NcuPart(limiter="dram", registers=32, top_stall="long_scoreboard", top_stall_pct=71.0)
    clean = SanitizerPart(verdict="clean", tools={"memcheck": "clean", "racecheck": "skipped: no shared memory"})
    rows = [replace(r, ncu=ncu, sanitizer=clean) if r.variant == "grid" else r for r in loaded.rows]
    path = tmp_path / "with_ncu.json"
    results.save(replace(loaded, rows=rows), path)
    text = page(execute(ReportRequest(path)))
    assert text.count("ncu: why") == 1 and "limiter: dram; top stall: long_scoreboard 71 %; registers: 32" in text
    assert text.count("<th class=\"\">sanitizer</th>") == 1 and ">clean<" in text
    plain = page(execute(ReportRequest(fixtures_dir / "results" / "smoke_a.json")))
    assert "ncu: why" not in plain and "sanitizer</th>" not in plain


def test_sanitizer_verdicts():
    assert ">clean<" in sanitizer_verdict(SanitizerPart(verdict="clean", tools={"memcheck": "clean"}))
    found = sanitizer_verdict(SanitizerPart(verdict="findings", findings=2, first="memcheck: oob <a.cu>:3"))
    assert "2 findings" in found and "&lt;a.cu&gt;:3" in found
    unjudged = sanitizer_verdict(SanitizerPart(tools={"memcheck": "not judged: the tool timed out"}))
    assert "not judged" in unjudged and "memcheck: the tool timed out" in unjudged
    assert sanitizer_verdict(None) == ""


def test_report_cli_writes_the_page_and_pngs(runner, fixtures_dir, tmp_path):
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


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (apt-get install chromium)")
def test_the_page_renders_in_headless_chromium(fixtures_dir, tmp_path):
    out = tmp_path / "r.html"
    out.write_text(page(execute(ReportRequest(fixtures_dir / "results" / "h100_matmul_all.json"))))
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={shot}", "--window-size=1400,2200", out.as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", out.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False).stdout
    assert dom.count("<svg") >= 2 and "matmul ladder" in dom
