"""The results file recorded on the lent GPU with two families gpuprof does not ship (gelu and the
course's polynomial activation, from examples/families; tests/fixtures/results/h100_user_family.json):
show, report --html, compare and merge read it in a folder where neither family exists, each in its
own units (GB/s), with its own formula, baseline and vendor speedups."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from gpuprof import results
from gpuprof.cli import app
from gpuprof.families import registry

RUNNER = CliRunner()


@pytest.fixture
def recorded(fixtures_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no examples/families here: the file alone must do
    monkeypatch.delenv(registry.FAMILIES_DIR_ENV, raising=False)
    path = tmp_path / "own.json"
    shutil.copy(fixtures_dir / "results" / "h100_user_family.json", path)
    for name in ("gelu", "poly"):
        with pytest.raises(Exception):  # noqa: B017 (whatever the resolver raises: the family is not here)
            registry.resolve(name)
    return path


def test_show_rates_each_family_in_its_own_units_with_its_speedups(recorded):
    done = RUNNER.invoke(app, ["show", str(recorded)], env={"COLUMNS": "120"})
    assert done.exit_code == 0, done.output
    assert "TFLOP/s" not in done.output and "GB/s = 8*n bytes" in done.output
    assert re.search(r"poly: y = x\^2 \+ x \+ 1", done.output)
    assert re.search(r"compiled \(vendor\)\s+\d+\s+OK", done.output) and "vs torch" in done.output


def test_report_html_carries_both_families(recorded, tmp_path):
    page = tmp_path / "own.html"
    done = RUNNER.invoke(app, ["report", str(recorded), "--html", str(page)])
    assert done.exit_code == 0, done.output
    text = page.read_text()
    assert "gelu" in text and "poly" in text and "GB/s" in text


def test_compare_of_the_file_with_itself_is_all_same(recorded):
    done = RUNNER.invoke(app, ["compare", str(recorded), str(recorded)], env={"COLUMNS": "120"})
    assert done.exit_code == 0, done.output
    assert "9 SAME" in done.output and "SLOWER" not in done.output.replace("0 SLOWER", "")


def test_merge_of_its_two_families_as_shards_rebuilds_the_file(recorded, tmp_path):
    data = json.loads(recorded.read_text())
    shards = []
    for name in ("gelu", "poly"):
        part = dict(data, rows=[r for r in data["rows"] if r["family"] == name])
        shard = tmp_path / f"{name}.json"
        shard.write_text(json.dumps(part))
        shards.append(str(shard))
    merged = tmp_path / "merged.json"
    done = RUNNER.invoke(app, ["merge", *shards, "--json", str(merged)])
    assert done.exit_code == 0, done.output
    loaded = results.load(merged)
    assert sorted(loaded.families) == ["gelu", "poly"] and len(loaded.rows) == 9
    assert loaded.families["gelu"].rate_kind == "bytes"
    shown = RUNNER.invoke(app, ["show", str(merged)], env={"COLUMNS": "120"})
    assert shown.exit_code == 0 and "TFLOP/s" not in shown.output
