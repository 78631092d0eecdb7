"""parsers.ncu_rep on the CuPy vecadd report, cross-checked against the details CSV of the same report."""

from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuprof.errors import InputError, ParseError
from gpuprof.parsers import ncu_rep
from gpuprof.parsers.ncu_csv import parse_details_csv
from gpuprof.tools import _proc
from gpuprof.tools.ncu import read_report_isolated
from tests.ncu_full_reports import requires_ncu_report

from .conftest import FIXTURES

REPORT = FIXTURES / "cupy-h100" / "vecadd_cupy.ncu-rep"
DETAILS = FIXTURES / "cupy-h100" / "vecadd_cupy_details.csv"




def test_missing_module_gives_an_import_error_with_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # makes `import ncu_report` raise ImportError
    with pytest.raises(ImportError) as err:
        ncu_rep.load_report(REPORT)
    assert isinstance(err.value, ncu_rep.NcuReportUnavailable) and "pip install ncu-report" in str(err.value)


def test_render_markup():
    text = "See @section:LaunchStats:Launch Statistics@ and the @url:Guide:https://x.y/z#a@ now."
    assert ncu_rep.render_markup(text) == "See Launch Statistics and the Guide (https://x.y/z#a) now."


@pytest.fixture(scope="module")
def both():
    pytest.importorskip("ncu_report")
    return ncu_rep.load_report(REPORT), parse_details_csv(DETAILS.read_text(), DETAILS)


def test_same_kernels_as_the_csv(both):
    rep, csv = both
    assert [r.id for r in rep] == [r.id for r in csv]
    for a, b in zip(rep, csv):
        assert (a.kernel_name, a.demangled_name, a.block, a.grid) == (b.kernel_name, b.demangled_name, b.block, b.grid)
        assert a.nvtx_ranges == b.nvtx_ranges == ("vecadd", a.kernel_name)
        assert a.registers_per_thread == b.registers_per_thread
        assert a.occupancy_limiter == b.occupancy_limiter
        # The CSV prints 3-4 significant digits in auto units (ms/us); the report keeps full precision.
        assert a.duration_ns == pytest.approx(b.duration_ns, rel=2e-3)
        assert a.achieved_occupancy_pct == pytest.approx(b.achieved_occupancy_pct, abs=0.01)


def test_every_csv_metric_is_in_the_report_with_the_same_value(both):
    """Checks the details-label table: each label the CSV printed maps to a metric the report has."""
    rep, csv = both
    for a, b in zip(rep, csv):
        missing = set(b.metrics) - set(a.metrics)
        assert not missing
        for name, value in b.metrics.items():
            if isinstance(value, str):
                assert str(a.metrics[name]) == value, name
            else:
                assert a.metrics[name] == pytest.approx(value, rel=6e-3, abs=0.006), name
                assert a.units[name] == b.units[name], name


def test_rule_results_match_the_csv(both):
    rep, csv = both
    for a, b in zip(rep, csv):
        key = lambda x: (x.section, x.rule, x.kind, x.message, x.speedup_type)
        assert sorted(map(key, a.advice)) == sorted(map(key, b.advice))
        for x in a.advice:
            (y,) = [y for y in b.advice if key(y) == key(x)]
            if x.estimated_speedup_pct is None:
                assert y.estimated_speedup_pct is None
            else:
                assert x.estimated_speedup_pct == pytest.approx(y.estimated_speedup_pct, abs=0.006)


def test_physics(both):
    rep, _ = both
    for r in rep:
        assert 0 < r.achieved_occupancy_pct <= r.theoretical_occupancy_pct <= 100
        assert r.compute_capability == "9.0"
    single, threads, grid = rep
    # 2^16 elements by one thread, 2^25 by one block, 2^25 by one thread each: more parallelism wins.
    assert grid.duration_ns < single.duration_ns and grid.duration_ns < threads.duration_ns


@requires_ncu_report
def test_not_a_report(tmp_path):
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"definitely not a report")
    with pytest.raises(ParseError):
        ncu_rep.load_report(bad)
    with pytest.raises(ParseError):
        ncu_rep.load_report(tmp_path / "missing.ncu-rep")


@requires_ncu_report
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_corrupted_report_loads_or_gives_one_input_error(data, tmp_path_factory):
    """Read in a child process, as gpuprof does: ncu_report can abort on a corrupt protobuf, and a
    native abort here would end the whole test run (it did, on one CI run of five)."""
    blob = bytearray(REPORT.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        blob = blob[: data.draw(st.integers(0, len(blob)))]
    path = tmp_path_factory.mktemp("fuzz") / "r.ncu-rep"
    path.write_bytes(bytes(blob))
    try:
        rows = read_report_isolated(path)
    except InputError as exc:
        assert str(path) in exc.message and "\n" not in exc.message
        return
    assert all(r.kernel_name for r in rows)


@requires_ncu_report
def test_child_reader_gives_the_same_rows_as_in_process():
    assert read_report_isolated(REPORT) == ncu_rep.load_report(REPORT)


def test_child_reader_without_the_module_says_so(monkeypatch, tmp_path):
    def no_module(argv, *, timeout_s, cwd=None, env=None):
        said = "reading .ncu-rep files needs ... pip install ncu-report"
        return _proc.Completed(argv, ncu_rep.CHILD_UNAVAILABLE, "", said)

    monkeypatch.setattr(_proc, "run", no_module)
    with pytest.raises(ncu_rep.NcuReportUnavailable, match="pip install ncu-report"):
        read_report_isolated(REPORT)


@pytest.mark.parametrize("code, said", [(-6, "SIGABRT"), (134, "SIGABRT"), (-11, "SIGSEGV"), (1, "code 1")])
def test_a_reader_that_dies_is_an_unreadable_report_exit_2(monkeypatch, code, said):
    monkeypatch.setattr(_proc, "run", lambda argv, **kw: _proc.Completed(argv, code, "", "[libprotobuf FATAL] ..."))
    with pytest.raises(InputError) as err:
        read_report_isolated(REPORT)
    assert err.value.exit_code == 2
    assert "not a readable .ncu-rep" in err.value.message and said in err.value.message
