"""parsers.sanitizer_log on recorded compute-sanitizer 2025.3.1 reports (all four tools), XML and old formats."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuprof.errors import ParseError
from gpuprof.parsers import sanitizer_log as sl
from gpuprof.parsers.sanitizer_log import SanitizerToolError, parse_log, parse_xml

from .conftest import load, mutate, tool_fixtures, transcript_sections

TEXT = [n for n in tool_fixtures("sanitizer_2025.3.1_", ".txt") if "_help" not in n and "_messages_" not in n]


def summary_of(name: str) -> sl.SanitizerSummary:
    fx = load(name)
    return parse_xml(fx.text, fx.path) if name.endswith(".xml") else parse_log(fx.text, fx.path)


def test_every_sanitizer_fixture_is_covered():
    covered = set(TEXT) | {
        "sanitizer_2025.3.1_memcheck_xml_save.xml",
        "sanitizer_2025.3.1_help.txt",
        "sanitizer_2025.3.1_messages_exit_codes.txt",
        "sanitizer_public_issue_excerpts.txt",
        "sanitizer_handmade_memcheck_triton_api_errors.txt",  # test_sanitizer_sites.py
    }
    assert set(tool_fixtures("sanitizer_", ".txt", ".xml")) == covered


@pytest.mark.parametrize("name", TEXT)
def test_reports_are_consistent_with_their_own_summary(name):
    fx = load(name)
    s = parse_log(fx.text, fx.path)
    tool = re.search(r"--tool (\w+)", fx.command)
    assert s.tool == (tool.group(1) if tool else "memcheck")  # inferred from the records
    assert s.error_count is not None
    assert all(f.kind in sl.KINDS and f.tool == s.tool and f.severity == "error" for f in s.findings)
    assert s.printed_count == len(s.findings)
    limit = re.search(r"--print-limit (\d+)", fx.command)
    assert s.truncated == (s.printed_count < s.error_count)
    if s.truncated:
        assert s.mismatch and str(s.error_count) in s.mismatch
        assert len(s.findings) == (int(limit.group(1)) if limit else 100)  # default --print-limit is 100
    else:
        assert s.mismatch is None


def test_oob_write_names_the_line_the_sidecar_gives():
    fx = load("sanitizer_2025.3.1_memcheck_oob_write_lineinfo.txt")
    file, line = re.search(r'"in (\S+):(\d+)"', fx.sidecar).groups()
    n_ints, n_threads = (int(x) for x in re.search(r"array of (\d+) ints, (\d+) threads", fx.sidecar).groups())
    s = parse_log(fx.text, fx.path)
    writes = [f for f in s.findings if f.kind == "invalid_write"]
    assert len(writes) == n_threads - n_ints  # one bad write per thread past the end
    for f in writes:
        assert (f.file, f.line, f.size) == (file, int(line), 4)  # int
        assert f.kernel.startswith("oob_write(") and f.message.endswith("is out of bounds")
        assert f.thread is not None and f.block is not None
    addresses = sorted(f.address for f in writes)
    assert addresses == list(range(addresses[0], addresses[0] + 4 * len(writes), 4))  # consecutive ints
    # The sticky launch failure turns later CUDA calls into API errors
    # (docs/tools.md, "compute-sanitizer: sticky errors").
    api = [f for f in s.findings if f.kind == "api_error"]
    assert len(api) == s.error_count - len(writes) and all("cudaErrorLaunchFailure" in f.message for f in api)
    no_line = parse_log(load("sanitizer_2025.3.1_memcheck_oob_write_no_lineinfo.txt").text)
    assert [f.kind for f in no_line.findings] == [f.kind for f in s.findings]
    assert all(f.file is None and f.line is None for f in no_line.findings)
    assert {f.kernel for f in no_line.findings if f.kernel} == {writes[0].kernel}


def test_xml_matches_the_text_report():
    fx = load("sanitizer_2025.3.1_memcheck_xml_save.xml")
    xml = parse_xml(fx.text, fx.path)
    text = parse_log(load("sanitizer_2025.3.1_memcheck_oob_write_lineinfo.txt").text)
    assert len(xml.findings) == int(re.search(r"--print-limit (\d+)", fx.command).group(1))
    assert xml.error_count is None and xml.tool == "memcheck"  # the XML has no summary element
    for x, t in zip(xml.findings, text.findings):
        assert (x.kind, x.thread, x.block, x.size, x.line) == (t.kind, t.thread, t.block, t.size, t.line)
        assert x.file.endswith(t.file) and t.kernel.startswith(x.kernel + "(")
    assert sl.load_xml(fx.path).findings == xml.findings


def test_print_limit_truncation_is_recorded():
    s = summary_of("sanitizer_2025.3.1_memcheck_print_limit_exitcode.txt")
    assert (s.error_count, s.not_printed, len(s.findings)) == (26, 23, 3)
    assert s.truncated and "3 of 26" in s.mismatch


def test_leak():
    s = summary_of("sanitizer_2025.3.1_memcheck_leak_check_full.txt")
    (leak,) = s.findings
    assert leak.kind == "leak" and leak.size == s.leaked_bytes and s.leak_allocations == 1 and leak.address


def test_api_errors_and_zero_findings():
    s = summary_of("sanitizer_2025.3.1_memcheck_api_errors.txt")
    assert Counter(f.kind for f in s.findings) == {"api_error": s.error_count}
    clean = summary_of("sanitizer_2025.3.1_memcheck_clean.txt")
    assert clean.error_count == 0 and clean.findings == () and clean.clean and clean.mismatch is None


def test_racecheck_analysis_agrees_with_the_hazard_report():
    analysis = summary_of("sanitizer_2025.3.1_racecheck_default_analysis.txt")
    hazards = summary_of("sanitizer_2025.3.1_racecheck_hazard_report.txt")
    (race,) = analysis.findings
    assert race.kind == "race_hazard" and "WAW" in race.detail and (race.file, race.line) == ("app.cu", 64)
    # Same program: the hazards aggregated in analysis mode are the hazards counted in hazard mode.
    assert race.count == hazards.error_count
    assert hazards.truncated and hazards.warning_count == 0
    for f in hazards.findings:
        assert f.detail == "WAW" and f.block == (0, 0, 0) and f.thread is not None
        assert f.address < 48 * 1024  # a __shared__ offset
        assert (f.file, f.line) == (race.file, race.line)


def test_initcheck_and_synccheck():
    init = summary_of("sanitizer_2025.3.1_initcheck_uninit_read.txt")
    assert {f.kind for f in init.findings} == {"uninitialized_read"} and init.not_printed == 156
    assert all(f.address is not None and f.line == 70 for f in init.findings)
    sync = summary_of("sanitizer_2025.3.1_synccheck_divergent_barrier.txt")
    assert {f.kind for f in sync.findings} == {"barrier_divergence"}
    assert sorted(f.thread[0] for f in sync.findings) == list(range(sync.error_count))  # one per thread


def test_public_excerpts_in_older_formats():
    text = load("sanitizer_public_issue_excerpts.txt").text
    blocks = re.split(r"^##### ", text, flags=re.MULTILINE)[1:]
    results = [parse_log(b) for b in blocks]
    assert [r.error_count for r in results] == [None] * 5  # excerpts: no summary line
    assert all(r.mismatch for r in results)  # ... which is recorded, not ignored
    hec, kokkos, cudf, gunrock, legacy = (r.findings for r in results)
    assert hec[0].kind == "race_hazard" and hec[0].severity == "warning" and hec[0].count == 294291 + 294127
    assert results[0].notes and results[0].truncated  # "Maximum number of hazards reached"
    assert kokkos[0].kind == "race_hazard" and kokkos[0].kernel.startswith("void Kokkos::")
    assert (cudf[0].kind, cudf[0].size, cudf[0].address) == ("misaligned", 16, 8)
    assert (gunrock[0].detail, gunrock[0].severity, gunrock[0].line) == ("RAW", "warning", 146)
    assert gunrock[0].file.endswith("warp_scan.cuh") and gunrock[0].block == (0, 0, 0)
    assert (legacy[0].kind, legacy[0].size, legacy[0].line) == ("invalid_read", 8, 75)
    assert legacy[0].kernel == "void vector_projection<double>(double*, int)"


def test_messages_transcript():
    sections = transcript_sections(load("sanitizer_2025.3.1_messages_exit_codes.txt").text)
    outcomes = []
    for _command, stdout, stderr, code in sections:
        try:
            s = parse_log(stdout + stderr)
            outcomes.append((s.error_count, len(s.findings)))
        except SanitizerToolError as exc:
            assert code == 255 and exc.kind == "invalid_option"
            outcomes.append("invalid_option")
        except ParseError:
            outcomes.append("no_report")
    assert outcomes == ["invalid_option", "invalid_option", (1, 1), (26, 1), "no_report"]
    quiet = parse_log(sections[-1][1], quiet=True)  # -q prints nothing at all for a clean run
    assert quiet.error_count is None and quiet.findings == ()


def test_truncated_log_records_the_mismatch():
    text = load("sanitizer_2025.3.1_memcheck_oob_write_lineinfo.txt").text
    cut = text[: len(text) // 2]
    s = parse_log(cut)
    assert s.error_count is None and s.findings and "no summary" in s.mismatch


def test_custom_prefix():
    text = load("sanitizer_2025.3.1_memcheck_leak_check_full.txt").text.replace("=========", "##")
    assert parse_log(text, prefix="##").leaked_bytes == 4096


@pytest.mark.parametrize("text", ["", "hello\n", "just the application talking\nERROR SUMMARY: 3 errors\n"])
def test_garbage_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_log(text)


def test_odd_summary_line_is_a_parse_error():
    with pytest.raises(ParseError, match="summary"):
        parse_log("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: many errors\n")


@pytest.mark.parametrize(
    "text",
    [
        "<ComputeSanitizerOutput><record>",
        "<other/>",
        "not xml",
        "<ComputeSanitizerOutput><record><what><size>four</size></what></record></ComputeSanitizerOutput>",
    ],
)
def test_bad_xml_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_xml(text)


def test_empty_xml_is_zero_findings():
    s = parse_xml('<?xml version="1.0"?><ComputeSanitizerOutput></ComputeSanitizerOutput>')
    assert s.findings == () and s.error_count is None


# --- fuzz ----------------------------------------------------------------------------------------

FUZZ_TEXTS = [
    load(n).text
    for n in (
        "sanitizer_2025.3.1_memcheck_print_limit_exitcode.txt",
        "sanitizer_2025.3.1_racecheck_hazard_report.txt",
        "sanitizer_2025.3.1_racecheck_default_analysis.txt",
        "sanitizer_2025.3.1_memcheck_leak_check_full.txt",
        "sanitizer_public_issue_excerpts.txt",
        "sanitizer_2025.3.1_messages_exit_codes.txt",
    )
]
XML_TEXT = load("sanitizer_2025.3.1_memcheck_xml_save.xml").text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_log_parses_or_raises_parse_error(data):
    text = mutate(data.draw(st.sampled_from(FUZZ_TEXTS)), data)
    try:
        s = parse_log(text)
    except (ParseError, SanitizerToolError):
        return
    assert all(f.kind in sl.KINDS for f in s.findings)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_xml_parses_or_raises_parse_error(data):
    try:
        s = parse_xml(mutate(XML_TEXT, data))
    except ParseError:
        return
    assert all(f.kind in sl.KINDS for f in s.findings)
