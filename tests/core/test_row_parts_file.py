"""A row's ncu and sanitizer parts in the results file: files of earlier gpuprofs (no levels, stalls,
hot lines, advice or findings) load as typed parts and save back unchanged; a malformed part is one
line naming the row and the key, exit 2, through `gpuprof show` as through any reader."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof import results
from gpuprof.cli import app
from gpuprof.row_parts import NcuPart, SanitizerPart

WITH = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "h100_ci_with.json"


def test_a_file_of_an_earlier_gpuprof_loads_typed_and_saves_its_parts_as_they_were(tmp_path):
    loaded = results.load(WITH)
    profiled = [r for r in loaded.rows if r.ncu is not None]
    assert profiled and all(isinstance(r.ncu, NcuPart) and isinstance(r.sanitizer, SanitizerPart) for r in profiled)
    first = profiled[0].ncu
    assert first.top_stall and first.level_bytes == {} and first.hot_lines == () and first.advice == ()
    assert profiled[0].sanitizer.verdict == "clean" and profiled[0].sanitizer.found == ()
    before = {r["id"]: (r.get("ncu"), r.get("sanitizer")) for r in json.loads(WITH.read_text())["rows"]}
    again = json.loads(results.save(loaded, tmp_path / "again.json").read_text())
    assert {r["id"]: (r.get("ncu"), r.get("sanitizer")) for r in again["rows"]} == before


def test_a_lean_load_keeps_the_typed_parts():
    rows = results.load(WITH, lean=True).rows
    assert any(isinstance(r.ncu, NcuPart) and r.ncu.registers for r in rows)
    assert all(r.sanitizer is None or isinstance(r.sanitizer, SanitizerPart) for r in rows)


BROKEN = {
    "ncu not an object": ("ncu", lambda part: "fast", "ncu must be an object"),
    "registers as text": ("ncu", lambda part: {**part, "registers": "16"}, "ncu.registers must be a whole number"),
    "negative kernels": ("ncu", lambda part: {**part, "kernels": -1}, "ncu.kernels must be a whole number"),
    "NaN bytes": ("ncu", lambda part: {**part, "dram_bytes": math.nan}, "ncu.dram_bytes is nan"),
    "stalls as a list": ("ncu", lambda part: {**part, "stalls": [1, 2]}, "ncu.stalls must be an object"),
    "a hot line without a line": ("ncu", lambda part: {**part, "hot_lines": [{"file": "a.cu"}]},
                                  "ncu.hot_lines[0].line must be a whole number"),
    "unknown verdict": ("sanitizer", lambda part: {**part, "verdict": "fine"}, "sanitizer.verdict 'fine' is none of"),
    "negative findings": ("sanitizer", lambda part: {**part, "findings": -2},
                          "sanitizer.findings must be a whole number"),
    "a finding's line as text": ("sanitizer", lambda part: {**part, "found": [{"tool": "memcheck", "line": "9"}]},
                                 "sanitizer.found[0].line must be a whole number"),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_a_malformed_part_is_one_line_naming_the_row_through_show(tmp_path, case):
    key, spoil, said = BROKEN[case]
    document = json.loads(WITH.read_text())
    row = next(r for r in document["rows"] if r.get("ncu") and r.get("sanitizer"))
    row[key] = spoil(row[key])
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(document))
    result = CliRunner().invoke(app, ["show", str(path)], env={"COLUMNS": "100"})
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and said in result.output and row["id"] in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1, result.output


def test_a_counter_ncu_could_not_give_is_written_as_absent_and_the_file_loads_again():
    """NaN or infinite numbers in a measured part are left out on writing, never written as NaN."""
    from gpuprof.row_parts import NcuPart, ncu_from_dict, ncu_to_dict

    part = NcuPart(kernels=1, duration_ns=float("nan"), flop=2.0, dram_bytes=float("inf"),
                   level_bytes={"dram": float("nan"), "l2": 4.0}, stalls={"long_scoreboard": 100.0})
    written = ncu_to_dict(part)
    assert "dram_bytes" not in written and written["level_bytes"] == {"l2": 4.0}
    assert written["duration_ns"] is None  # kept as null: readers of earlier files look for it
    back = ncu_from_dict(json.loads(json.dumps(written, allow_nan=False)), "row 1")
    assert back.flop == 2.0 and back.dram_bytes is None and back.intensity is None
