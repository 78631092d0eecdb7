"""The report page in headless Chromium, where Chromium is installed: the course run's page and the
`--with ncu,sanitize` run's page both render (a screenshot that is not blank, the charts in the DOM),
and scripts/report_screenshot.sh makes the docs' pictures from a results file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof.commands.report import ReportRequest, execute
from gpuprof.render.report_html import page

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (apt-get install chromium)")
REPO = Path(__file__).resolve().parents[2]


def not_blank(png: Path) -> None:
    """Something is drawn: many colours, and a good share of the picture is not the background."""
    image_module = pytest.importorskip("PIL.Image")
    image = image_module.open(png).convert("RGB").resize((140, 240))
    colours = image.getcolors(maxcolors=140 * 240)
    background = max(colours)[1]
    drawn = sum(n for n, colour in colours if colour != background)
    assert len(colours) > 50 and drawn > 0.05 * 140 * 240


@pytest.mark.parametrize("name", ["h100_course_a.json.gz", "h100_ci_with.json", "h200_matmul_with.json"])
def test_the_page_renders_in_headless_chromium(fixtures_dir, tmp_path, name):
    out = tmp_path / "r.html"
    story = execute(ReportRequest(fixtures_dir / "results" / name))
    families = len({row.family for row in story.report.results.rows})
    out.write_text(page(story))
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={shot}", "--window-size=1400,2400", out.as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    not_blank(shot)
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", out.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False).stdout
    assert dom.count('<svg class="ladder"') >= families and dom.count('<svg class="roofline') >= families
    assert 'id="headline"' in dom and "matmul ladder" in dom


def test_the_screenshot_script_makes_a_picture_1400_wide(fixtures_dir, tmp_path):
    shot = tmp_path / "with.png"
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(REPO)}
    done = subprocess.run(["bash", str(REPO / "scripts" / "report_screenshot.sh"),
                           str(fixtures_dir / "results" / "h100_ci_with.json"), str(shot), "1400x2000",
                           "row-matmul-naive-4096x4096x4096"], capture_output=True, text=True, timeout=300,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr
    image_module = pytest.importorskip("PIL.Image")
    assert image_module.open(shot).width == 1400
    not_blank(shot)
