"""parsers.nsys_sqlite on a recorded `nsys export --type sqlite` file: launches, NVTX events, bad files."""

from __future__ import annotations

import csv
import itertools
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuprof.errors import ParseError
from gpuprof.parsers import nsys_sqlite as ns

from .conftest import TOOLS, load

SQLITE = TOOLS / "nsys_2025.3.2_export_small.sqlite"



def test_sqlite_kernels():
    kernels = ns.read_sqlite_kernels(SQLITE)
    reference = list(csv.DictReader(load("nsys_2025.3.1_sqlite_query_kernels.csv").text.splitlines()))
    # Same program, another run (sidecars): same launches in the same order with the same resources.
    assert [k.short_name for k in kernels] == [r["short"] for r in reference]
    for k, r in zip(kernels, reference):
        assert (k.demangled_name, k.mangled_name) == (r["demangled"], r["mangled"])
        assert (k.grid[0], k.block[0], k.registers_per_thread) == (
            int(r["gridX"]),
            int(r["blockX"]),
            int(r["registersPerThread"]),
        )
        assert k.static_shared_mem_bytes == int(r["staticSharedMemory"])
        assert k.duration_ns > 0
    for a, b in itertools.pairwise(kernels):
        if a.stream_id == b.stream_id:
            assert b.start_ns >= a.end_ns  # one stream runs its kernels one after another


def test_sqlite_nvtx():
    events = ns.read_sqlite_nvtx(SQLITE)
    ranges = {e.name: e for e in events if e.kind in ("push_pop", "start_end")}
    assert set(ranges) == {"outer", "inner", "se_range", "dom_range"}
    outer, inner = ranges["outer"], ranges["inner"]
    assert outer.start_ns <= inner.start_ns and inner.end_ns <= outer.end_ns
    assert ranges["dom_range"].domain == "mydomain" and outer.domain is None
    assert ranges["se_range"].kind == "start_end"
    assert all(e.pid == outer.pid and e.pid > 0 for e in events)
    info = ns.read_sqlite_export_info(SQLITE)
    sidecar = load("nsys_2025.3.2_export_small.sqlite").sidecar
    assert info["EXPORT_PRODUCT_VERSION"] in sidecar and info["EXPORT_SCHEMA_VERSION"] in sidecar


def test_sqlite_schema_without_data(tmp_path):
    db = tmp_path / "empty.sqlite"
    with sqlite3.connect(db) as con:
        con.executescript(load("nsys_2025.3.1_sqlite_schema.sql").text)
    assert ns.read_sqlite_kernels(db) == [] and ns.read_sqlite_nvtx(db) == []
    bare = tmp_path / "bare.sqlite"
    sqlite3.connect(bare).close()
    assert ns.read_sqlite_kernels(bare) == [] and ns.read_sqlite_export_info(bare) == {}


def test_sqlite_unhappy(tmp_path):
    with pytest.raises(ParseError):
        ns.read_sqlite_kernels(tmp_path / "missing.sqlite")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ParseError):
        ns.read_sqlite_kernels(junk)
    no_strings = tmp_path / "no_strings.sqlite"
    with sqlite3.connect(no_strings) as con:
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER)")
    with pytest.raises(ParseError, match="StringIds"):
        ns.read_sqlite_kernels(no_strings)
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as con:
        con.executescript(
            "CREATE TABLE StringIds (id INTEGER, value TEXT);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, name INTEGER);"
        )
    with pytest.raises(ParseError, match="query"):
        ns.read_sqlite_kernels(old)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_corrupted_sqlite_reads_or_raises_parse_error(data, tmp_path_factory):
    blob = bytearray(SQLITE.read_bytes())
    for _ in range(data.draw(st.integers(1, 20))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        blob = blob[: data.draw(st.integers(0, len(blob)))]
    path = tmp_path_factory.mktemp("fuzz") / "x.sqlite"
    path.write_bytes(bytes(blob))
    for read in (ns.read_sqlite_kernels, ns.read_sqlite_nvtx, ns.read_sqlite_export_info):
        try:
            read(path)
        except ParseError:
            pass


