"""`sanitize --json` of a log with findings: every finding's source place is keyed "file:line"
(a (file, line) tuple key made json.dumps raise TypeError on any log that had a finding)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpuprof.cli import app

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "tools" / "sanitizer_2025.3.1_memcheck_oob_write_lineinfo.txt"


def test_import_of_a_log_with_findings_writes_json_with_string_keys(tmp_path):
    out = tmp_path / "s.json"
    result = CliRunner().invoke(app, ["sanitize", "--import", str(LOG), "--json", str(out)])
    assert result.exit_code == 1, result.output  # a finding, not a crash
    (run,) = json.loads(out.read_text())["runs"]
    assert run["findings"] and run["findings"][0]["kind"] == "invalid_write"
    assert run["sources"] == {"app.cu:59": {"file": "app.cu", "line": 59, "text": None, "compiled_as": None}}


def test_json_on_stdout_parses_with_findings():
    result = CliRunner().invoke(app, ["sanitize", "--import", str(LOG), "--json", "-"])
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    assert document["schema"] == "gpuprof.sanitize" and document["runs"][0]["findings"]
