"""Text from a user's file is printed as text, never as Rich markup (issue 27: a results file with
`[/bold]` in a GPU or family name crashed `show`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuprof.cli import app

RESULTS = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "smoke_a.json"
MARKUP = ["[/bold]", "[red]x[/red]", "[link=file:///etc]y[/link]", "[", "]", "[/]"]


@pytest.mark.parametrize("text", MARKUP)
@pytest.mark.parametrize("field", ["gpu_name", "family", "variant", "command"])
def test_markup_in_a_results_file_is_shown_as_written(tmp_path, runner, text, field):
    data = json.loads(RESULTS.read_text())
    if field == "gpu_name":
        data["environment"]["gpu_name"] = f"GPU {text}"
    elif field == "command":
        data["command"] = f"gpuprof suite {text}"
    else:
        for row in data["rows"]:
            if row["family"] == "vecadd":
                row[field] = f"{row[field]}{text}"
                row.pop("id", None)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    result = runner.invoke(app, ["show", str(path), "--wide"])
    assert result.exit_code == 0, result.output
    assert text in result.stdout


def test_markup_in_a_log_file_name_is_shown_as_written(tmp_path, runner):
    log = RESULTS.parents[1] / "tools" / "sanitizer_2025.3.1_memcheck_oob_write_lineinfo.txt"
    named = tmp_path / "[bold]log[red].txt"
    named.write_bytes(log.read_bytes())
    result = runner.invoke(app, ["sanitize", "--import", str(named)])
    assert result.exit_code == 1, result.output  # a finding, not a crash
    assert "[bold]log[red].txt" in result.stdout
