"""`gpuprof report` where matplotlib is not installed (README command 1 installs no extras): the
page is written whole, every chart drawn by gpuprof itself as inline SVG; --png is refused (exit 3)
before its folder is made. matplotlib is hidden by a None in sys.modules, as a missing module reads."""

from __future__ import annotations

import re
import sys

import pytest

from gpuprof.cli import app
from gpuprof.commands.report import ReportRequest, execute
from gpuprof.render import charts
from gpuprof.render.report_html import page


@pytest.fixture
def no_matplotlib(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert not charts.available()


def test_the_page_is_written_with_every_chart(runner, fixtures_dir, tmp_path, no_matplotlib):
    out = tmp_path / "page.html"
    done = runner.invoke(app, ["report", str(fixtures_dir / "results" / "h100_ci_with.json"), "--html", str(out)])
    assert done.exit_code == 0, done.output
    text = out.read_text()
    assert "matplotlib" not in done.output and "matplotlib" not in text
    assert "<table" in text and "vecadd" in text
    assert text.count('<div class="chart ladder">') == 2 and text.count('<div class="chart roofline">') == 2
    assert not any(m == "matplotlib" or m.startswith("matplotlib.") for m in sys.modules if sys.modules[m])


def test_the_ladders_are_drawn_by_gpuprof(fixtures_dir, no_matplotlib):
    story = execute(ReportRequest(fixtures_dir / "results" / "h100_matmul_all.json", None))
    text = page(story)
    (ladder,) = re.findall(r'<div class="chart ladder">(<svg .*?</svg>)</div>', text)
    rows = story.report.tables[0].rows
    assert ladder.count('<rect class="bar"') == sum(1 for r in rows if r.derived and r.derived.rate and not r.vendor)
    for row in rows:
        assert f">{row.variant}</text>" in ladder or f">{row.variant} (vendor) " in ladder
    best = max((r for r in rows if not r.vendor and r.derived and r.derived.rate), key=lambda r: r.derived.rate)
    assert f"<title>{best.variant}: " in ladder and "http" not in ladder.replace("http://www.w3.org", "")


def test_png_is_refused_before_its_folder_is_made(runner, fixtures_dir, tmp_path, no_matplotlib):
    folder = tmp_path / "charts"
    done = runner.invoke(app, ["report", str(fixtures_dir / "results" / "smoke_a.json"), "--html",
                               str(tmp_path / "page.html"), "--png", str(folder)])
    assert done.exit_code == 3, done.output
    assert "--png needs matplotlib" in done.output and "--plot" not in done.output
    assert not folder.exists() and not (tmp_path / "page.html").exists()
