"""parsers.ncu_source on full-set H100 reports with the source embedded: what the data says about a
naive matmul (rows on threadIdx.x: uncoalesced), a 32x32 shared-memory tiled one, and warptile."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuprof.errors import InputError, ParseError
from gpuprof.parsers import ncu_source
from gpuprof.tools import _proc
from gpuprof.tools.ncu import read_sources_isolated

from .conftest import FIXTURES, TOOLS

NAIVE_INNER = "acc += A[row * n + k] * B[k * n + col];"
TILED_INNER = "acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];"


@pytest.fixture(scope="module")
def plain(where_reports):
    naive, tiled = ncu_source.load_sources(where_reports["plain"])
    return naive, tiled


@pytest.fixture(scope="module")
def warptile(where_reports):
    (kernel,) = ncu_source.load_sources(where_reports["warptile"])
    return kernel


def hottest(source, n):
    return sorted(source.lines, key=lambda line: -line.samples)[:n]


def test_kernels_in_report_order_with_ids_as_the_row_reader_gives(plain):
    naive, tiled = plain
    assert (naive.kernel_id, tiled.kernel_id) == (0, 1)
    assert naive.kernel_name.startswith("matmul_naive(") and tiled.kernel_name.startswith("matmul_tiled(")
    assert naive.missing is None and tiled.missing is None
    assert naive.schema == ncu_source.SCHEMA


def test_naive_time_is_the_inner_product_line_waiting_on_uncoalesced_global_loads(plain):
    naive, _ = plain
    (top,) = hottest(naive, 1)
    assert top.file.endswith("matmul_lineinfo.cu") and top.line == 18 and top.text == NAIVE_INNER
    assert naive.share(top.samples) > 99
    # the load/store queue is full (lg_throttle) far more than the loads' latency is waited for
    reasons = list(top.stalls)
    assert reasons[:2] == ["lg_throttle", "long_scoreboard"] and top.stalls["lg_throttle"] > 0.9 * top.samples
    # A[row * n + k] with rows on threadIdx.x: 32 sectors per request; B[k * n + col]: one, broadcast
    assert top.sectors_per_request == pytest.approx(16.5)
    assert top.excessive_sectors_pct == pytest.approx(84.8, abs=0.1)
    assert top.shared_wavefronts == 0 and top.wavefronts_per_ideal is None
    store = next(line for line in naive.lines if line.line == 19)
    assert store.text == "C[row * n + col] = acc;" and store.sectors_per_request == 32.0


def test_naive_warp_states_agree_with_the_samples(plain):
    naive, _ = plain
    assert next(iter(naive.warp_states)) == "lg_throttle" and next(iter(naive.stalls)) == "lg_throttle"
    # the states' cycles per issued instruction add up to the kernel's whole
    assert sum(naive.warp_states.values()) == pytest.approx(naive.cycles_per_issue, rel=1e-3)
    assert naive.cycles_per_issue == pytest.approx(454.0, abs=0.1)


def test_tiled_time_is_the_shared_memory_loop_then_the_tile_loads_then_the_barrier(plain):
    _, tiled = plain
    inner, load_a, loop = hottest(tiled, 3)
    assert (inner.line, load_a.line, loop.line) == (34, 30, 29)
    assert inner.text == TILED_INNER and tiled.share(inner.samples) == pytest.approx(71.8, abs=0.1)
    assert next(iter(inner.stalls)) == "mio_throttle"  # the shared-memory (MIO) queue is full
    assert next(iter(load_a.stalls)) == "long_scoreboard"  # the store to As waits on A's global load
    # The second __syncthreads() (line 35) is sampled at the instruction after it: the loop's branch.
    assert loop.text.startswith("for (int t = 0;") and next(iter(loop.stalls)) == "barrier"
    assert next(iter(tiled.warp_states)) == "mio_throttle"


def test_tiled_accesses_are_coalesced_and_free_of_bank_conflicts(plain):
    _, tiled = plain
    by_line = {line.line: line for line in tiled.lines}
    for number in (30, 31):  # the tile loads: global in, shared out
        line = by_line[number]
        assert line.sectors_per_request == 4.0 and line.excessive_sectors_pct == 0.0
        assert line.wavefronts_per_ideal == 1.0 and line.bank_conflict_wavefronts == 0
    assert by_line[34].global_requests == 0 and by_line[34].wavefronts_per_ideal == 1.0


def test_warptile_lines_are_the_recorded_file_and_its_line_numbers(warptile):
    assert warptile.missing is None
    assert set(warptile.files) == {"/checkout1/kernels/matmul/warptile.cu"}  # NVRTC #line, joined by ncu
    (top,) = hottest(warptile, 1)
    assert top.line == 243 and top.text == "acc[i][j] += fragA[k & 1][i] * fragB[k & 1][j];"
    assert list(top.stalls)[:2] == ["selected", "not_selected"]  # issuing: the FFMA loop is busy, not waiting
    # the 4-byte cp.async of A into shared memory takes four wavefronts per ideal one (line 79)
    assert next(line for line in warptile.lines if line.line == 79).wavefronts_per_ideal == 4.0


def test_totals_add_up(plain, warptile):
    for source in (*plain, warptile):
        assert source.samples == sum(source.stalls.values()) == sum(s.samples for s in source.sass)
        assert sum(line.samples for line in source.lines) <= source.samples
        assert all(line.samples == sum(line.stalls.values()) for line in source.lines)
        assert [s.address for s in source.sass] == sorted(s.address for s in source.sass)
        assert source.sass[0].offset == 0 and all(s.sass for s in source.sass)
        assert "no_instructions" not in source.stalls  # one name for the sampler and the warp states


def test_sass_of_the_naive_inner_line_holds_its_loads(plain):
    naive, _ = plain
    at_18 = [s for s in naive.sass if s.line == 18]
    loads = [s for s in at_18 if s.sass.startswith("LDG")]
    assert len(loads) == 32  # unrolled by 16: one A and one B load each
    assert sum(s.samples for s in loads) > 0.9 * sum(s.samples for s in at_18)


def test_json_round_trip(plain, warptile):
    sources = [*plain, warptile]
    assert ncu_source.from_json(ncu_source.to_json(sources)) == sources


def test_a_report_without_source_counters_says_why(fixture):
    for report in (FIXTURES / "cupy-h100" / "vecadd_cupy.ncu-rep", TOOLS / "ncu-2025.3.1__launch_vecadd_grid.ncu-rep"):
        pytest.importorskip("ncu_report")
        for source in ncu_source.load_sources(report):
            assert source.missing == ncu_source.NO_SAMPLES and "SourceCounters" in source.missing
            assert source.samples == 0 and not source.stalls


def test_the_child_reader_gives_what_the_parser_gives(where_reports, plain):
    assert read_sources_isolated(where_reports["plain"]) == list(plain)


def test_not_a_report_is_one_parse_error(tmp_path):
    pytest.importorskip("ncu_report")
    with pytest.raises(ParseError):
        ncu_source.load_sources(tmp_path / "missing.ncu-rep")


@pytest.mark.parametrize("cut", [0, 100, 4096, 1_000_000])
def test_a_broken_report_read_in_the_child_is_one_line_input_error(where_reports, tmp_path, cut):
    """ncu_report may abort the interpreter on a corrupt file: the child dies, gpuprof says so."""
    blob = where_reports["plain"].read_bytes()
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(blob[:cut] if cut else b"definitely not a report")
    try:
        sources = read_sources_isolated(bad)
    except InputError as exc:
        assert str(bad) in exc.message and "\n" not in exc.message
        return
    assert all(s.kernel_name for s in sources)


def test_the_child_without_ncu_report_says_how_to_get_it(monkeypatch, where_reports):
    from gpuprof.parsers import ncu_rep

    monkeypatch.setattr(_proc, "run", lambda argv, **kw: _proc.Completed(
        argv, ncu_rep.CHILD_UNAVAILABLE, "", "pip install ncu-report"))
    with pytest.raises(ncu_rep.NcuReportUnavailable, match="pip install ncu-report"):
        read_sources_isolated(where_reports["plain"])


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_corrupted_report_gives_sources_or_one_input_error(data, where_reports, tmp_path_factory):
    blob = bytearray(where_reports["warptile"].read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path_factory.mktemp("fuzz") / "r.ncu-rep"
    path.write_bytes(bytes(blob))
    try:
        sources = read_sources_isolated(path)
    except InputError as exc:
        assert str(path) in exc.message and "\n" not in exc.message
        return
    assert all(s.kernel_name and (s.missing or s.lines) for s in sources)


def test_what_source_adds_to_gpuprofs_sections_is_all_the_view_reads(where_reports):
    """Recorded with gpuprof's default sections plus SourceCounters, WarpStateStats and
    --import-source yes (no --set full): every field is there, and it tells the same story."""
    naive, tiled = ncu_source.load_sources(where_reports["sections"])
    for source in (naive, tiled):
        assert source.missing is None and source.samples > 0 and source.warp_states and source.cycles_per_issue
        assert all(line.text is not None for line in source.lines)  # the source was embedded
    (top,) = hottest(naive, 1)
    assert (top.line, top.text, next(iter(top.stalls))) == (18, NAIVE_INNER, "lg_throttle")
    assert top.sectors_per_request == pytest.approx(16.5) and top.excessive_sectors_pct > 80
    assert [line.line for line in hottest(tiled, 3)] == [34, 30, 29]
    assert next(line for line in tiled.lines if line.line == 34).shared_wavefronts > 0
