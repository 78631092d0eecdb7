"""parsers.ncu_csv on the recorded ncu 2025.3.1 CSVs (and two public ones): behaviour and physics."""

from __future__ import annotations

import csv
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuprof.errors import ParseError, ToolFailed
from gpuprof.parsers import ncu_csv
from gpuprof.parsers.ncu_csv import kernel_base_name, parse_csv, parse_details_csv, parse_raw_csv
from gpuprof.parsers.ncu_metrics import LIMITS as OCCUPANCY_LIMITS

from .conftest import FIXTURES, load, mutate, tool_fixtures, transcript_sections

RAW = tool_fixtures("ncu_2025.3.1_raw_page_", ".csv")
DETAILS = tool_fixtures("ncu_2025.3.1_details_page_", ".csv") + tool_fixtures("ncu_public_", ".csv")
ALL_CSV = RAW + DETAILS + ["../cupy-h100/vecadd_cupy_details.csv"]
# Fixtures of ncu output that is not per-kernel metrics: must be refused with a ParseError.
REFUSED = [
    "ncu_2025.3.1_session_page.csv",
    "ncu_2025.3.1_source_page_sass.csv",
    "ncu_2025.3.1_summary_per_gpu_malformed.csv",
    "ncu_2025.3.1_text_details_default.txt",
]
# Max resident warps per SM by compute capability (CUDA programming guide, table of CC features).
MAX_WARPS_PER_SM = {"8.0": 64, "8.6": 48, "8.9": 48, "9.0": 64, "10.0": 64, "12.0": 48}


def rows_of(name: str):
    fx = load(name)
    return parse_csv(fx.text, fx.path)


def test_every_ncu_fixture_is_parsed_or_refused():
    covered = set(RAW) | set(DETAILS) | set(REFUSED)
    listed = {n for n in tool_fixtures("ncu_", ".csv", ".txt")}
    # help / list texts have nothing to parse; the messages transcript has its own test
    skipped = {n for n in listed if re.search(r"_help|_list_|_messages_", n)}
    assert listed - skipped == covered


@pytest.mark.parametrize("name", ALL_CSV)
def test_rows_satisfy_invariants(name):
    rows = rows_of(name)
    assert rows, "every fixture profiled at least one kernel"
    assert [r.id for r in rows] == sorted({r.id for r in rows})
    for r in rows:
        assert r.kernel_name and "(" not in r.kernel_name and " " not in r.kernel_name
        assert r.kernel_name in r.demangled_name
        for dims in (r.block, r.grid):
            assert dims is not None and all(d >= 1 for d in dims)
        if r.duration_ns is not None:
            assert 100 < r.duration_ns < 1e9  # between 0.1 us and 1 s for these small programs
        for pct in (
            r.sm_throughput_pct,
            r.memory_throughput_pct,
            r.dram_throughput_pct,
            r.achieved_occupancy_pct,
            r.theoretical_occupancy_pct,
        ):
            assert pct is None or 0 <= pct <= 100
        if r.achieved_occupancy_pct is not None and r.theoretical_occupancy_pct is not None:
            assert 0 < r.achieved_occupancy_pct <= r.theoretical_occupancy_pct + 0.5
        if r.registers_per_thread is not None:
            assert 1 <= r.registers_per_thread <= 255
        if r.sm_frequency_hz is not None:
            assert 0.5e9 < r.sm_frequency_hz < 3e9
        threads = r.metrics.get("launch__thread_count")
        if isinstance(threads, float):
            assert threads == math.prod(r.block) * math.prod(r.grid)
        for a in r.advice:
            assert a.kernel_id == r.id and a.kind in {"OPT", "INF", "WRN", "ERR"} and a.message
            assert " " not in a.section  # rule rows carry the section identifier
            assert a.estimated_speedup_pct is None or 0 <= a.estimated_speedup_pct <= 100


@pytest.mark.parametrize("name", ALL_CSV)
def test_theoretical_occupancy_follows_from_the_limiter(name):
    """Theoretical occupancy = blocks allowed by the tightest limit x warps per block / max warps."""
    for r in rows_of(name):
        limits = [r.metrics.get(f"launch__occupancy_limit_{k}") for k in OCCUPANCY_LIMITS]
        if r.theoretical_occupancy_pct is None or any(not isinstance(v, float) for v in limits):
            continue
        warps_per_block = math.ceil(math.prod(r.block) / 32)
        max_warps = MAX_WARPS_PER_SM[r.compute_capability]
        expected = 100 * min(min(limits), max_warps // warps_per_block) * warps_per_block / max_warps
        assert r.theoretical_occupancy_pct == pytest.approx(expected, abs=0.01)
        assert r.occupancy_limiter and all(
            r.metrics[f"launch__occupancy_limit_{k}"] == min(limits) for k in r.occupancy_limiter.split("+")
        )


@pytest.mark.parametrize("name", REFUSED)
def test_other_pages_are_refused_naming_the_known_layouts(name):
    fx = load(name)
    with pytest.raises(ParseError) as err:
        parse_csv(fx.text, fx.path)
    assert "known layouts" in str(err.value) and err.value.path == str(fx.path)
    if name.endswith(".txt"):
        assert "--csv" in err.value.why  # the human-readable page: say how to get CSV


def test_vecadd_dram_bytes_cover_its_inputs():
    """ncu flushes caches before each replay (--cache-control all), so both inputs come from DRAM;
    the output may still sit in the 50 MB write-back L2. The inputs are the two H2D copies of the
    same test program in the nsys trace fixture."""
    # gpuprof does not parse cuda_gpu_trace (it asks nsys for summaries only): read its two columns here.
    trace = csv.DictReader(load("nsys_2025.3.1_cuda_gpu_trace.csv").text.splitlines())
    h2d = [float(t["Bytes (MB)"]) * 1e6 for t in trace if "Host-to-Device" in t["Name"]]
    assert len(h2d) == 2
    for name in ("ncu_2025.3.1_raw_page_LC_ALL_C_no_grouping.csv", "ncu_2025.3.1_raw_page_LC_ALL_en_US_grouped.csv"):
        (row,) = rows_of(name)
        assert row.kernel_name == "vecAdd"
        assert row.dram_bytes >= sum(h2d) - 1000  # MB printed with 3 decimals
        n = row.metrics["launch__thread_count"]  # one element per thread
        assert row.dram_bytes <= 3 * 4 * n * 1.05  # at most a, b and c once each


def test_locales_agree():
    c = rows_of("ncu_2025.3.1_raw_page_LC_ALL_C_no_grouping.csv")[0]
    us = rows_of("ncu_2025.3.1_raw_page_LC_ALL_en_US_grouped.csv")[0]
    assert set(c.metrics) == set(us.metrics)
    assert us.metrics["launch__thread_count"] == c.metrics["launch__thread_count"] == 4_194_304
    assert 0.5 < us.duration_ns / c.duration_ns < 2


def test_import_auto_units_equal_base_units():
    auto = rows_of("ncu_2025.3.1_raw_page_import_auto_units.csv")
    base = rows_of("ncu_2025.3.1_raw_page_import_base_units.csv")
    assert [r.duration_ns for r in auto] == [r.duration_ns for r in base]
    assert [r.metrics for r in auto] == [r.metrics for r in base]
    assert all(r.units["gpu__time_duration.sum"] == "ns" for r in auto)
    assert all(r.dram_bytes is None for r in auto)  # not in the report: silently omitted by ncu


def test_details_auto_units_are_scaled_to_base():
    auto = rows_of("ncu_2025.3.1_details_page_auto_units.csv")[0]
    base = rows_of("ncu_2025.3.1_details_page_default_basic_set.csv")[0]
    assert auto.units["gpc__cycles_elapsed.avg.per_second"] == "hz"
    assert auto.sm_frequency_hz == pytest.approx(base.sm_frequency_hz, rel=0.02)
    assert 0.5 < auto.duration_ns / base.duration_ns < 2


def test_print_fp_values_parse():
    (row,) = rows_of("ncu_2025.3.1_raw_page_print_fp.csv")
    assert row.registers_per_thread == int(row.metrics["launch__registers_per_thread"])
    assert row.block == (256, 1, 1)


def test_metric_name_label_and_label_name_give_the_same_keys():
    by_label = rows_of("ncu_2025.3.1_details_page_LC_ALL_C.csv")[0]
    by_label_name = rows_of("ncu_2025.3.1_details_page_print_metric_name_label_name.csv")[0]
    by_name = rows_of("ncu_2025.3.1_details_page_print_metric_name_name.csv")[0]
    assert set(by_label.metrics) == set(by_label_name.metrics)
    assert set(by_label.metrics) <= set(by_name.metrics)
    launch_labels = rows_of("ncu_2025.3.1_details_page_nvtx_columns_and_rename.csv")[0]
    launch_names = {k for k in by_name.metrics if k.startswith("launch__")}
    assert launch_names == set(launch_labels.metrics)


def test_vecadd_durations_agree_across_fixtures():
    durations = [
        r.duration_ns
        for name in ALL_CSV
        if "cupy" not in name
        for r in rows_of(name)
        if r.kernel_name == "vecAdd" and r.duration_ns is not None
    ]
    assert len(durations) >= 8
    assert max(durations) / min(durations) < 2


def test_nvtx_columns_and_rename():
    fx = load("ncu_2025.3.1_details_page_nvtx_columns_and_rename.csv")
    include = re.search(r"--nvtx-include (\S+)/", fx.command).group(1)
    rows = parse_details_csv(fx.text, fx.path)
    assert rows
    for r in rows:
        assert r.nvtx_ranges[0] == include
        assert not r.demangled_name.startswith(r.nvtx_ranges[-1] + "/")
        assert r.kernel_name in ("vecAdd", "saxpy")
    assert max(len(r.nvtx_ranges) for r in rows) == 2  # saxpy runs inside outer > inner


def test_cupy_details_match_the_readme():
    readme = (FIXTURES / "README.md").read_text()
    rows = rows_of("../cupy-h100/vecadd_cupy_details.csv")
    peak = rows_of("ncu_2025.3.1_raw_page_roofline_metrics.csv")[0].peak_dram_bytes_per_s  # same H100 model
    for r in rows:
        m = re.search(rf"`{r.kernel_name}` \(<<<(\d+),(\d+)>>>, 2\^(\d+)", readme)
        grid, block, log2n = (int(x) for x in m.groups())
        assert (r.grid[0], r.block[0]) == (grid, block)
        assert r.nvtx_ranges == ("vecadd", r.kernel_name)
        moved = 3 * 4 * 2**log2n  # read a and b, write c: float32
        assert r.duration_ns * 1e-9 * peak >= moved  # no kernel beats the DRAM peak
    grid = next(r for r in rows if r.kernel_name == "vecadd_grid")
    # What DRAM Throughput % says was moved is at least what the kernel must move (minus caching).
    assert grid.dram_throughput_pct / 100 * peak * grid.duration_ns * 1e-9 >= 0.9 * 3 * 4 * 2**25
    assert grid.duration_ns < min(r.duration_ns for r in rows if r is not grid)


def test_roofline_fields():
    fp32, fp64 = rows_of("ncu_2025.3.1_raw_page_roofline_metrics.csv")
    assert (fp32.kernel_name, fp64.kernel_name) == ("fma_fp32", "fma_fp64")
    assert fp32.flop_fp32 > 0 and fp32.flop_fp64 == 0 and fp64.flop_fp64 > 0 and fp64.flop_fp32 == 0
    for r, flop, peak in ((fp32, fp32.flop_fp32, fp32.peak_fp32_flops), (fp64, fp64.flop_fp64, fp64.peak_fp64_flops)):
        achieved = flop / (r.duration_ns * 1e-9)
        assert 0.3 * peak < achieved <= peak  # compute-bound, never above the peak
        assert r.arithmetic_intensity == pytest.approx(r.flop / r.dram_bytes)
        assert r.arithmetic_intensity > peak / r.peak_dram_bytes_per_s  # right of the ridge point
        assert r.dram_bytes / (r.duration_ns * 1e-9) <= r.peak_dram_bytes_per_s
    assert fp32.peak_fp32_flops == pytest.approx(2 * fp32.peak_fp64_flops, rel=0.01)  # H100: FP32 = 2x FP64


def test_rule_advice():
    fx = load("ncu_public_superbenchmark_set_full_details.csv")
    advice = ncu_csv.parse_rule_advice(fx.text, fx.path)
    rule_rows = [ln for ln in fx.text.splitlines() if ln.startswith('"') and re.search(r'"(OPT|INF|WRN|ERR)","', ln)]
    assert len(advice) == len(rule_rows)
    assert {a.section for a in advice} >= {"SpeedOfLight", "Occupancy"}
    cupy = load("../cupy-h100/vecadd_cupy_details.csv")
    speedups = [a for a in ncu_csv.parse_rule_advice(cupy.text) if a.estimated_speedup_pct is not None]
    assert speedups and all(a.speedup_type in ("local", "global") for a in speedups)
    assert ncu_csv.parse_rule_advice(load("ncu_2025.3.1_details_page_metrics_only.csv").text) == []


def test_metrics_only_details_has_no_rule_columns():
    (row,) = rows_of("ncu_2025.3.1_details_page_metrics_only.csv")
    assert set(row.metrics) == {"gpu__time_duration.sum", "launch__registers_per_thread"}
    assert row.advice == () and row.dram_bytes is None and row.arithmetic_intensity is None


def test_to_frame_is_long_form():
    rows = rows_of("ncu_2025.3.1_raw_page_metrics.csv")
    frame = ncu_csv.to_frame(rows)
    assert list(frame.columns) == ["kernel_id", "kernel_name", "metric", "value", "unit"]
    assert len(frame) == sum(len(r.metrics) for r in rows)


@pytest.mark.parametrize(
    "printed, base",
    [
        ("vecAdd(const float *, const float *, float *, int)", "vecAdd"),
        ("void scale<float, 2>(T1 *, T1, int)", "scale"),
        ("myns::ns_kernel(float *, myns::Functor, int)", "ns_kernel"),
        ("vecadd_single", "vecadd_single"),
        (
            (
                "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_"
                "execute_kernel__5x_cublas"
            ),
            None,
        ),
        (
            "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(T1::Params)",
            "Kernel2",
        ),
        ("enable_if<!T7, void>::type kernel<int, __nv_bfloat16, 7, cublasGemvParamsEx<int, float>>(T13)", "kernel"),
    ],
)
def test_kernel_base_name(printed, base):
    assert kernel_base_name(printed) == (base or printed)


def test_kernel_base_name_of_pytorch_lambdas():
    names = [r.kernel_name for r in rows_of("ncu_2025.3.1_raw_page_pytorch_kernels.csv")]
    assert names[0] == "distribution_elementwise_grid_stride_kernel"
    assert names[3] == "vectorized_elementwise_kernel"


# --- unhappy paths -----------------------------------------------------------------------------

# docs/tools.md, "ncu: messages": the line as printed by the CLI (quoted from a public support article).
PERM_LINE = (
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
    "Counters on the target device 0"
)


def test_counters_not_permitted():
    text = f"==PROF== Connected to process 4242 (app)\n{PERM_LINE}\n==PROF== Disconnected from process 4242\n"
    with pytest.raises(ToolFailed) as err:
        parse_raw_csv(text)
    assert err.value.kind == "counters_not_permitted" and "ERR_NVGPUCTRPERM" in err.value.message
    # Even with rows printed (e.g. from another process), the permission error wins.
    csv_text = load("ncu_2025.3.1_raw_page_import_base_units.csv").text
    with pytest.raises(ToolFailed, match="ERR_NVGPUCTRPERM"):
        parse_raw_csv(PERM_LINE + "\n" + csv_text)


def test_messages_transcript():
    fx = load("ncu_2025.3.1_messages_warnings_errors.txt")
    program_kernels = {r.kernel_name for r in rows_of("ncu_2025.3.1_raw_page_metrics.csv")}
    sections = transcript_sections(fx.text)
    assert len(sections) == 8
    outcomes = []
    for command, stdout, _stderr, code in sections:
        try:
            parse_raw_csv(stdout)
        except ToolFailed as exc:
            outcomes.append(exc.kind)
            if exc.kind == "no_kernels_profiled" and "does_not_exist" in command:
                assert set(exc.available_kernels) == program_kernels
            if exc.kind == "tool_error":
                assert code == 1
        except ParseError:
            outcomes.append("no_csv")  # "[CSV rows omitted]" in the transcript, or -o without --page
    assert outcomes == [
        "no_kernels_profiled",
        "no_kernels_profiled",
        "tool_error",
        "tool_error",
        "tool_error",
        "no_csv",
        "no_csv",
        "no_csv",
    ]


def test_errors_without_results_are_tool_errors_with_results_are_not():
    with pytest.raises(ToolFailed) as err:
        parse_raw_csv("==ERROR== Option '--section NoSuchSection' did not match any section.\n")
    assert err.value.kind == "tool_error" and "NoSuchSection" in err.value.message
    text = (
        load("ncu_2025.3.1_raw_page_import_base_units.csv").text
        + "==ERROR== The application returned an error code (1).\n"
    )
    assert len(parse_raw_csv(text)) == 2
    assert ncu_csv.scan_messages(text).errors == ("The application returned an error code (1).",)


@pytest.mark.parametrize(
    "name",
    [
        "ncu_2025.3.1_raw_page_metrics.csv",
        "ncu_2025.3.1_details_page_default_basic_set.csv",
        "ncu_2025.3.1_details_page_nvtx_columns_and_rename.csv",
        "ncu_public_llmperfopt_import_details_auto_units.csv",
    ],
)
@pytest.mark.parametrize("where", [0.2, 0.5, 0.8])
def test_truncated_mid_row_is_a_parse_error(name, where):
    text = load(name).text.rstrip("\n")
    last = text.rfind("\n") + 1
    cut = text[: last + max(2, int((len(text) - last) * where))]
    with pytest.raises(ParseError) as err:
        parse_csv(cut)
    assert "line" in err.value.where


@pytest.mark.parametrize("text", ["", "hello\nworld\n", "\x00\x01garbage", '"a","b"\n"1","2"\n', '"ID","x"\n"oops'])
def test_garbage_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_csv(text)


def test_wrong_page_for_the_function():
    with pytest.raises(ParseError, match="details-page"):
        parse_raw_csv(load("ncu_2025.3.1_details_page_metrics_only.csv").text)
    with pytest.raises(ParseError, match="raw-page"):
        parse_details_csv(load("ncu_2025.3.1_raw_page_print_fp.csv").text)


def test_non_number_in_a_numeric_metric_names_the_place():
    text = load("ncu_2025.3.1_raw_page_LC_ALL_C_no_grouping.csv").text
    bad = re.sub(r'"39870208"', '"lots"', text)
    with pytest.raises(ParseError) as err:
        parse_raw_csv(bad, "x.csv")
    assert "dram__bytes.sum" in err.value.where and "lots" in err.value.why
    (row,) = parse_raw_csv(re.sub(r'"39870208"', '"n/a"', text))
    assert row.dram_bytes is None  # n/a = not collected


def test_bad_block_size_names_the_column():
    text = load("ncu_2025.3.1_raw_page_print_fp.csv").text.replace('"(256, 1, 1)"', '"(256, 1)"')
    with pytest.raises(ParseError, match="Block Size"):
        parse_raw_csv(text)


def test_load_csv_reads_files(tmp_path):
    assert ncu_csv.load_csv(load("ncu_2025.3.1_details_page_LC_ALL_C.csv").path)[0].kernel_name == "vecAdd"
    with pytest.raises(ParseError):
        ncu_csv.load_csv(tmp_path / "missing.csv")


# --- fuzz ------------------------------------------------------------------------------------

FUZZ_SOURCES = [
    "ncu_2025.3.1_raw_page_import_base_units.csv",
    "ncu_2025.3.1_details_page_LC_ALL_C.csv",
    "ncu_2025.3.1_details_page_nvtx_columns_and_rename.csv",
    "ncu_2025.3.1_raw_page_print_fp.csv",
    "ncu_2025.3.1_messages_warnings_errors.txt",
]
FUZZ_TEXTS = [load(n).text for n in FUZZ_SOURCES]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutated_csv_parses_or_raises_parse_error(data):
    text = mutate(data.draw(st.sampled_from(FUZZ_TEXTS)), data)
    for parse in (parse_csv, ncu_csv.parse_rule_advice):
        try:
            result = parse(text)
        except (ParseError, ToolFailed):
            continue
        assert isinstance(result, list)
