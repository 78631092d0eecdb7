"""parsers.nsys_stats on recorded `nsys stats --format csv` output (the format gpuprof asks for)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuprof.errors import ParseError
from gpuprof.parsers import nsys_stats as ns
from gpuprof.parsers.ncu_csv import kernel_base_name
from gpuprof.parsers.nsys_stats import NsysToolError, parse_stats

from .conftest import TOOLS, load, mutate, tool_fixtures, transcript_sections

HELP = [n for n in tool_fixtures("nsys_", ".txt") if "_help" in n]
QUERY_CSV = [n for n in tool_fixtures("nsys_", ".csv") if "_sqlite_" in n]  # sqlite3 CLI output, not nsys
PROFILE_CONSOLE = ["nsys_2025.3.1_profile_stats_true_console.txt"]  # `nsys profile` output: its Generated: list
GPU_TRACE = ["nsys_2025.3.1_cuda_gpu_trace.csv"]  # not a report gpuprof asks for; test_ncu_csv reads its bytes
STATS = [n for n in tool_fixtures("nsys_", ".csv", ".txt")
         if n not in HELP + QUERY_CSV + PROFILE_CONSOLE + GPU_TRACE and "_messages_" not in n]
STATS += [p.name for p in sorted(TOOLS.glob("nsys-*__*.stats.txt"))]  # recorded by scripts/record_fixtures.sh
SAME_RUN_KERN_SUM = [  # one rep.nsys-rep, summarised in several ways (sidecars: same profile command)
    "nsys_2025.3.1_cuda_gpu_kern_sum.csv",
    "nsys_2025.3.1_cuda_gpu_kern_sum_quiet_stdout.csv",
    "nsys_2025.3.1_cuda_gpu_kern_sum_timeunit_usec_stdout.txt",
]


def stats_of(name: str) -> ns.NsysStats:
    fx = load(name)
    return parse_stats(fx.text, fx.path)


def _stat_ok(r, total: float, count: int, lo: float, med: float, avg: float, hi: float, sd: float) -> None:
    assert 0 <= lo <= med <= hi and lo <= avg * (1 + 1e-6) and avg <= hi * (1 + 1e-6) and sd >= 0, r
    assert count >= 1
    # Totals and averages are printed rounded (to 0.1 ns or 1 kB), so compare loosely.
    assert total == pytest.approx(avg * count, rel=1e-3, abs=count * 1e3)


@pytest.mark.parametrize("name", STATS)
def test_every_stats_fixture_parses_into_consistent_records(name):
    stats = stats_of(name)
    assert stats.reports
    for report in stats.reports:
        if report.name not in ns.REPORT_NAMES:
            assert report.records == (), report.name  # a report gpuprof does not ask for stays untyped
            continue
        assert report.records, report.name
        assert len(report.records) == len(report.rows)
        if hasattr(report.records[0], "time_pct"):
            assert sum(r.time_pct for r in report.records) == pytest.approx(100, abs=0.06 * len(report.records))
        for r in report.records:
            if isinstance(r, (ns.NsysKernelSummary, ns.NsysNvtxSummary)):
                _stat_ok(r, r.total_ns, r.instances, r.min_ns, r.med_ns, r.avg_ns, r.max_ns, r.stddev_ns)
            elif isinstance(r, (ns.NsysApiSummary,)):
                _stat_ok(r, r.total_ns, r.num_calls, r.min_ns, r.med_ns, r.avg_ns, r.max_ns, r.stddev_ns)
            elif isinstance(r, ns.NsysMemTimeSummary):
                _stat_ok(r, r.total_ns, r.count, r.min_ns, r.med_ns, r.avg_ns, r.max_ns, r.stddev_ns)


def test_every_nsys_fixture_is_covered():
    covered = set(STATS) | set(HELP) | set(QUERY_CSV) | set(PROFILE_CONSOLE) | set(GPU_TRACE) | {
        "nsys_2025.3.1_messages_exit_codes.txt"}
    assert set(tool_fixtures("nsys_", ".csv", ".txt")) == covered


@pytest.mark.parametrize("name", HELP + QUERY_CSV)
def test_non_report_texts_are_refused(name):
    with pytest.raises(ParseError):
        stats_of(name)


def test_same_report_saved_printed_and_in_usec_gives_the_same_records():
    first, *others = [stats_of(n).report("cuda_gpu_kern_sum") for n in SAME_RUN_KERN_SUM]
    for other in others:
        for a, b in zip(first.records, other.records):
            # --timeunit usec prints 3 decimals of us, i.e. whole ns, except StdDev (0.001 us).
            assert replace(b, stddev_ns=a.stddev_ns) == a
            assert b.stddev_ns == pytest.approx(a.stddev_ns, abs=0.5)


def test_base_and_mangled_variants():
    full = stats_of("nsys_2025.3.1_cuda_gpu_kern_sum.csv").report("cuda_gpu_kern_sum").records
    base = stats_of("nsys_2025.3.1_cuda_gpu_kern_sum_base_stdout.txt").report("cuda_gpu_kern_sum")
    assert base.args == "base"
    by_base: dict[str, int] = {}
    for k in full:
        by_base[kernel_base_name(k.name)] = by_base.get(kernel_base_name(k.name), 0) + k.instances
    assert {k.name: k.instances for k in base.records} == by_base  # ":base" merges template instances
    mangled = stats_of("nsys_2025.3.1_cuda_gpu_kern_sum_mangled_stdout.txt").report("cuda_gpu_kern_sum").records
    assert all(k.name.startswith("_Z") for k in mangled)
    assert sorted(k.total_ns for k in mangled) == sorted(k.total_ns for k in full)


def test_nvtx_name_variant_prefixes_the_innermost_range():
    fx = load("nsys_2025.3.1_cuda_gpu_kern_sum_nvtx_name_stdout.txt")
    records = parse_stats(fx.text).report("cuda_gpu_kern_sum").records
    ranges = {r.name for r in stats_of("nsys_2025.3.1_nvtx_sum.csv").report("nvtx_sum").records}
    prefixed = [k for k in records if re.match(r"\w+/", k.name)]
    assert prefixed and all(k.name.split("/", 1)[0] in ranges for k in prefixed)
    assert sum(k.instances for k in records) == 10  # the program's 10 launches, however they are named


def test_eight_reports_in_one_stdout():
    fx = load("nsys_2025.3.1_stats_csv_8_reports_stdout.txt")
    asked = re.search(r"--report (\S+)", fx.command).group(1).split(",")
    stats = parse_stats(fx.text, fx.path)
    assert [r.name for r in stats.reports] == asked
    typed = [r.name for r in stats.reports if r.records]
    assert set(typed) == set(asked) & set(ns.REPORT_NAMES)  # the four gpuprof asks for, typed; the rest kept as text
    copies = {m.operation: m for m in stats.report("cuda_gpu_mem_time_sum").records}
    assert copies["[CUDA memcpy Host-to-Device]"].count == 2  # the program's two inputs
    nvtx = {r.range: r for r in stats.report("nvtx_sum").records}
    assert nvtx[":outer"].domain is None and nvtx[":outer"].name == "outer"
    assert nvtx["mydomain:dom_range"].domain == "mydomain" and nvtx[":se_range"].style == "StartEnd"
    assert nvtx[":inner"].total_ns < nvtx[":outer"].total_ns  # inner is nested in outer


def test_profile_console_lists_the_generated_files():
    fx = load("nsys_2025.3.1_profile_stats_true_console.txt")
    assert ns.parse_profile_output(fx.text) == ("rep.nsys-rep", "rep.sqlite")


def test_public_samples():
    llm = ns.parse_kern_sum(load("nsys_public_llmperfopt_cuda_gpu_kern_sum.csv").text)
    assert len(llm) > 50 and any("," in k.name for k in llm)


def test_messages_transcript():
    sections = transcript_sections(load("nsys_2025.3.1_messages_exit_codes.txt").text)
    outcomes = []
    for command, stdout, stderr, _code in sections:
        text = stdout + stderr
        try:
            if command.startswith("nsys profile"):
                outcomes.append(ns.parse_profile_output(text))
            else:
                stats = parse_stats(text)
                outcomes.append(tuple(r.name for r in stats.reports) or tuple(s.report for s in stats.skipped))
                if stats.skipped:
                    with pytest.raises(NsysToolError) as err:
                        stats.report("openmp_sum")
                    assert err.value.kind == "no_data" and "does not contain" in err.value.message
        except NsysToolError as exc:
            outcomes.append(exc.kind)
    assert outcomes == [
        "stale_sqlite",
        "unknown_report",
        ("openmp_sum",),
        "no_report_generated",
        ("nv.nsys-rep",),
        ("cuda_gpu_kern_sum", "nvtx_sum"),
        ("cap.nsys-rep",),
        ("cuda_gpu_kern_sum",),
    ]


def test_importer_failure():
    # docs/tools.md, "nsys: the copy bundled with Nsight Compute": without libdw it records a .qdstrm, then prints this.
    text = (
        "Generating '/tmp/nsys-report-1a2b.qdstrm'\nImporter error status: An unknown error occurred.\n"
        "Unable to retrieve the importer version: skipping importation of the QDSTRM file.\n"
    )
    for parse in (ns.parse_profile_output, parse_stats):
        with pytest.raises(NsysToolError) as err:
            parse(text)
        assert err.value.kind == "importer_failed"


def test_missing_report_is_a_tool_error_not_a_crash():
    stats = stats_of("nsys_2025.3.1_nvtx_sum.csv")
    with pytest.raises(NsysToolError) as err:
        stats.report("cuda_gpu_kern_sum")
    assert err.value.kind == "report_missing"


@pytest.mark.parametrize(
    "name",
    [
        "nsys_2025.3.1_cuda_gpu_kern_sum.csv",
        "nsys_2025.3.1_stats_csv_8_reports_stdout.txt",
    ],
)
def test_truncated_mid_row_is_a_parse_error(name):
    text = load(name).text.rstrip("\n")
    last = text.rfind("\n") + 1
    cut = text[: last + (len(text) - last) // 2]
    with pytest.raises(ParseError) as err:
        parse_stats(cut)
    assert "line" in err.value.where


@pytest.mark.parametrize("text", ["", "garbage\n", "a,b,c\n1,2,3\n", "\x00\x01\x02"])
def test_garbage_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_stats(text)


def test_non_number_names_the_column():
    text = load("nsys_2025.3.1_nvtx_sum.csv").text.replace("443773,1,", "443773,one,")
    with pytest.raises(ParseError) as err:
        parse_stats(text)
    assert "instances" in err.value.where


# --- fuzz ----------------------------------------------------------------------------------------

FUZZ_TEXTS = [
    load(n).text
    for n in (
        "nsys_2025.3.1_stats_csv_8_reports_stdout.txt",
        "nsys_2025.3.1_cuda_gpu_kern_sum_timeunit_usec_stdout.txt",
        "nsys_2025.3.1_messages_exit_codes.txt",
    )
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_stats_parse_or_raise_parse_error(data):
    text = mutate(data.draw(st.sampled_from(FUZZ_TEXTS)), data)
    try:
        stats = parse_stats(text)
    except (ParseError, NsysToolError):
        return
    assert isinstance(stats, ns.NsysStats)


def test_old_header_spellings_are_accepted():
    # docs/tools.md, "nsys: report formats across versions": 2021-22 nsys wrote "Time(%)", "Average", "Minimum",
    # "Maximum", no Med/StdDev (second-hand).
    text = (
        "Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Name\n"
        '61.3,1000,2,500.0,400,600,"vecAdd(const float *, const float *, float *, int)"\n'
        "38.7,631,1,631.0,631,631,saxpy\n"
    )
    rows = ns.parse_kern_sum(text)
    assert [(k.instances, k.med_ns, k.stddev_ns) for k in rows] == [(2, None, None), (1, None, None)]
    assert rows[0].total_ns == 2 * rows[0].avg_ns


def test_number_out_of_range_is_a_parse_error():
    text = load("nsys_2025.3.1_nvtx_sum.csv").text.replace("443773,1,", "443773,1e999,")
    with pytest.raises(ParseError, match="out of range"):
        parse_stats(text)


def test_program_output_saying_error_does_not_fail_a_profile():
    text = "ERROR: my app prints this\nGenerated:\n\trep.nsys-rep\n"
    assert ns.parse_profile_output(text) == ("rep.nsys-rep",)
