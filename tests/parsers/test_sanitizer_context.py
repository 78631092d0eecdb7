"""Sanitizer findings keep their context (issue 38): memcheck's "N bytes after/before the nearest
allocation at A of size M bytes" line, and the range of threads a repeated error came from, parsed
from the recorded H100 logs and shown by `sanitize` (live and through --import alike: both read the
log with parse_log)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.parsers.sanitizer_log import NearestAllocation, parse_log
from gpuprof.render.sanitize_context import allocation_line, threads_line

TOOLS = Path(__file__).resolve().parents[1] / "fixtures" / "tools"
LINEINFO = TOOLS / "sanitizer_2025.3.1_memcheck_oob_write_lineinfo.txt"
NO_LINEINFO = TOOLS / "sanitizer_2025.3.1_memcheck_oob_write_no_lineinfo.txt"

# Synthetic, not recorded: one memcheck record written in the format of the recorded ones above,
# with the "before" form of the allocation line (an index below 0) and a misaligned access inside one.
SYNTHETIC_BEFORE = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at shift_left(const float *, float *, int)+0x90 in shift.cu:7
=========     by thread (0,0,0) in block (0,0,0)
=========     Access to 0x7f0000000ffc is out of bounds
=========     and is 4 bytes before the nearest allocation at 0x7f0000001000 of size 1,024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x1234] in shift
========= 
========= Invalid __global__ read of size 4 bytes
=========     at unaligned(const char *, float *)+0x40 in shift.cu:12
=========     by thread (1,0,0) in block (0,0,0)
=========     Address 0x7f0000001001 is misaligned
=========     and is inside the nearest allocation at 0x7f0000001000 of size 1,024 bytes
========= 
========= ERROR SUMMARY: 2 errors
"""


def test_recorded_out_of_bounds_writes_carry_their_allocation():
    for log in (LINEINFO, NO_LINEINFO):
        writes = [f for f in parse_log(log.read_text()).findings if f.kind == "invalid_write"]
        assert len(writes) == 24
        assert all(f.allocation is not None and f.allocation.side == "after" and f.allocation.size == 4000
                   for f in writes)
        assert [f.allocation.distance for f in writes if f.allocation] == list(range(1, 94, 4))
    first = next(f for f in parse_log(LINEINFO.read_text()).findings if f.kind == "invalid_write")
    assert first.allocation == NearestAllocation("after", 1, 0x7F92D2800000, 4000)
    api = [f for f in parse_log(LINEINFO.read_text()).findings if f.kind == "api_error"]
    assert api and all(f.allocation is None for f in api)


def test_a_repeated_error_is_one_thread_range_and_one_allocation_line():
    writes = [f for f in parse_log(LINEINFO.read_text()).findings if f.kind == "invalid_write"]
    assert threads_line(writes) == " threads (232..255,0,0) of block (3,0,0)"
    assert threads_line(writes[:1]) == " thread (232,0,0) in block (3,0,0)"
    assert threads_line(writes[::2]) == " threads (232..254,0,0) of block (3,0,0) (12 threads)"
    line = allocation_line(writes)
    assert line is not None
    assert line.startswith("1..93 bytes after the end of the 4,000-byte allocation at 0x7f92d2800000")
    assert "right past the end" in line


def test_synthetic_before_and_inside_forms():
    before, inside = parse_log(SYNTHETIC_BEFORE).findings
    assert before.allocation == NearestAllocation("before", 4, 0x7F0000001000, 1024)
    assert allocation_line([before]) == "4 bytes before the start of the 1,024-byte allocation at 0x7f0000001000"
    assert inside.kind == "misaligned" and inside.allocation == NearestAllocation("inside", None, 0x7F0000001000, 1024)
    assert allocation_line([inside]) == "inside the 1,024-byte allocation at 0x7f0000001000"


def test_sanitize_import_shows_the_range_and_the_allocation(tmp_path):
    out = tmp_path / "s.json"
    result = CliRunner().invoke(app, ["sanitize", "--import", str(LINEINFO), "--json", str(out)])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "invalid write of 4 bytes ×24 in oob_write threads (232..255,0,0) of block (3,0,0)" in text
    assert "1..93 bytes after the end of the 4,000-byte allocation at 0x7f92d2800000" in text
    (run,) = json.loads(out.read_text())["runs"]
    assert run["findings"][0]["allocation"] == {"side": "after", "distance": 1, "address": 0x7F92D2800000,
                                                "size": 4000}
