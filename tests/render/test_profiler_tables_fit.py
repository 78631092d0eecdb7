"""The ncu and nsys tables at 80, 100 and 160 columns, on recorded data: every row on one line,
no kernel stem, variant or NVTX range cut (no "…"), optional columns left out instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from gpuprof.analysis.kernel_summary import summarize_kernels
from gpuprof.analysis.roofline import Point, Roof
from gpuprof.commands import nsys_results, nsys_summaries, nsys_torch_fallback
from gpuprof.commands.ncu import NcuResult, NcuRun, group_rows
from gpuprof.parsers import ncu_csv, nsys_stats
from gpuprof.render import ncu_view, nsys_view
from gpuprof.render.kernel_names import short_names

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TOOLS = FIXTURES / "tools"
WIDTHS = (80, 100, 160)


def render(renderable, width: int) -> list[str]:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text().splitlines()


def assert_rows_whole(lines: list[str], width: int, labels: list[str]) -> None:
    assert all(len(line) <= width for line in lines)
    # A stem may mark an omitted middle ("head…tail"); no cell ends in "…" (a cut).
    assert not any(re.search(r"…(\s|$)", line) for line in lines), "\n".join(lines)
    for label in labels:
        hits = [line for line in lines if line.startswith(label + " ") or line == label]
        assert hits, f"{label!r} is not whole at the start of a row:\n" + "\n".join(lines)


def ncu_runs() -> dict[str, NcuRun]:
    pytorch = TOOLS / "ncu_2025.3.1_raw_page_pytorch_kernels.csv"  # long demangled PyTorch names
    cupy = FIXTURES / "cupy-h100" / "vecadd_cupy_details.csv"  # NVTX ranges and rule advice
    templated = TOOLS / "ncu_2025.3.1_details_page_sections_templated_kernels.csv"
    runs = {}
    for name, path in (("pytorch", pytorch), ("cupy", cupy), ("templated", templated)):
        rows = ncu_csv.parse_csv(path.read_text(), path)
        runs[name] = NcuRun(None, "none", group_rows(rows, path), "ncu --import CSV")
    return runs


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("source", ["pytorch", "cupy", "templated"])
def test_ncu_summary_table_fits(source, width):
    run = ncu_runs()[source]
    summaries = summarize_kernels(r for res in run.results for r in res.rows)
    names = short_names([s.name for s in summaries])
    lines = render(ncu_view.summary_table(run, width), width)
    assert_rows_whole(lines, width, [names[s.name] for s in summaries])
    assert len(set(names.values())) == len(summaries)  # stems are unique within the table


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("source", ["pytorch", "cupy", "templated"])
def test_ncu_per_launch_table_fits(source, width):
    run = ncu_runs()[source]
    lines = render(ncu_view.launches_table(run, width), width)
    names = short_names([r.demangled_name for res in run.results for r in res.rows])
    ranges = {r.demangled_name: r.nvtx_ranges[-1] if r.nvtx_ranges else "-" for res in run.results for r in res.rows}
    assert_rows_whole(lines, width, [ranges[n] for n in names])
    for name, stem in names.items():  # the kernel stem follows its range on the same line
        assert any(line.startswith(ranges[name] + " ") and f" {stem} " in f"{line} " for line in lines), stem


def test_families_table_shows_variant_and_failure_whole():
    path = FIXTURES / "cupy-h100" / "vecadd_cupy_details.csv"
    rows = ncu_csv.parse_csv(path.read_text(), path)
    run = NcuRun("vecadd", "none", [NcuResult("implicit_gemm_with_a_long_name", path, rows[:1]),
                                    NcuResult("im2col_gemm", None, error="ncu wrote no report")], "ncu_report module")
    for width in WIDTHS:
        lines = render(ncu_view.launches_table(run, width), width)
        assert_rows_whole(lines, width, ["implicit_gemm_with_a_long_name", "im2col_gemm"])
        assert any("not profiled (reason below)" in line for line in lines)


def test_wide_shows_full_names_and_every_column():
    run = ncu_runs()["pytorch"]
    lines = render(ncu_view.summary_table(run, 80, wide=True), 400)
    text = "\n".join(lines)
    assert "void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4," in text
    assert "limiter" in text and "not shown at this width" not in text


def test_narrow_terminal_names_the_columns_left_out():
    text = "\n".join(render(ncu_view.summary_table(ncu_runs()["pytorch"], 80), 80))
    assert "not shown at this width:" in " ".join(text.split())


def test_advice_is_a_list_with_whole_sentences():
    run = ncu_runs()["cupy"]
    for width in WIDTHS:
        lines = render(ncu_view.summary_advice(run), width)
        assert not any("…" in line for line in lines)
        joined = " ".join(" ".join(lines).split())
        assert "AchievedOccupancy" in joined and "est. speedup" in joined
    advice = [a for r in run.results for row in r.rows for a in row.advice if a.kind == "OPT"]
    first = ncu_view.first_sentence(advice[0].message)
    assert first.endswith(".") and first in " ".join(" ".join(render(ncu_view.summary_advice(run), 80)).split())


@pytest.mark.parametrize("width", WIDTHS)
def test_roofline_table_fits(width):
    roof = Roof(66.5e12, 3.35e12, "ncu peak metrics (FP32 FFMA, DRAM)")
    points = [Point("vectorized_elementwise_kernel<4, CUDAFunctor_add>", 0.23, 0.54e12), Point("grid", 0.1, 0.2e12)]
    lines = render(ncu_view.roofline_table(points, roof, width), width)
    assert_rows_whole(lines, width, [p.label for p in points])


def nsys_profiles() -> list[nsys_results.NsysProfile]:
    sqlite = TOOLS / "nsys_2025.3.2_export_small.sqlite"
    public = TOOLS / "nsys_public_llmperfopt_cuda_gpu_kern_sum.csv"
    kernels = tuple(nsys_stats.parse_report(public.read_text(), "cuda_gpu_kern_sum", public))
    torch = TOOLS / "torch-2.11.0__vecadd-torch.trace.json"
    return [
        nsys_results.NsysProfile("sqlite", "sqlite", Path("out"), (nsys_summaries.sqlite_summary(sqlite),)),
        nsys_results.NsysProfile("nsys", "nsys", Path("out"), (nsys_results.NsysSummary("llm", kernels=kernels),)),
        nsys_results.NsysProfile("torch", "torch.profiler", Path("out"),
                                 (nsys_torch_fallback.trace_summary(torch, "torch"),)),
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_nsys_tables_fit(width):
    for profile in nsys_profiles():
        summary = profile.summaries[0]
        lines = render(nsys_view.render_profile(profile, width), width)
        names = short_names([k.name for k in summary.kernels])
        table_lines = [ln for ln in lines if not ln.startswith(("kept:", "note:", "source:", "Chrome trace", "nsys "))]
        assert_rows_whole(table_lines, width, [names[k.name] for k in summary.kernels])


def test_json_keeps_full_names_that_tables_shorten():
    import json

    from gpuprof.commands.ncu import to_dict

    run = ncu_runs()["pytorch"]
    data = json.loads(json.dumps(to_dict(run)))
    full = {r.demangled_name for res in run.results for r in res.rows}
    assert {k["name"] for k in data["kernels"]} == full
    assert len(data["launches"]) == sum(len(res.rows) for res in run.results)


def test_a_report_with_levels_but_no_peak_for_the_kernels_precision_says_so():
    """The course's cuBLAS HGEMM program under `gpuprof ncu --` (recorded on the H200): both kernels'
    FLOPs are FP16 (half-precision FMAs, FP16-accumulate HMMA) and the report holds the cache levels
    but only FP32 and FP64 peaks. The caption said the levels were missing; it now says what is."""
    from gpuprof.parsers.ncu_levels import RooflineLevels
    from gpuprof.parsers.ncu_metrics import NcuKernelRow

    levels = RooflineLevels(traffic={"L1": 5.7e8, "L2": 4.7e10, "DRAM": 4.3e9},
                            bandwidth={"L1": 3.3e13, "L2": 1.0e13, "DRAM": 4.8e12},
                            work={"fp32": 2.5e7, "fp64": 0.0, "fp16": 1.7e8},
                            peak_work={"fp32": 6.6e13, "fp64": 3.3e13})
    row = NcuKernelRow(id=0, kernel_name="gemmSN_NN_kernel", demangled_name="gemmSN_NN_kernel",
                       duration_ns=3168.0, roofline_levels=levels)
    roof = Roof(66.9e12, 4.8e12, "datasheet H200 SXM", compute={"fp32": 66.9e12, "fp16": 267.6e12})
    points = [Point("gemmSN_NN_kernel", 0.0257, 1.2e9, "fp16")]
    text = " ".join(" ".join(render(ncu_view.roofline_table(points, roof, 100, [row]), 100)).split())
    assert "in the report, but it holds no FP16 peak" in text and "not in this report" not in text
    bare = NcuKernelRow(id=0, kernel_name="k", demangled_name="k", duration_ns=3168.0)
    text = " ".join(" ".join(render(ncu_view.roofline_table(points, roof, 100, [bare]), 100)).split())
    assert "memory levels (L1, L2): not in this report" in text


def test_a_kernel_without_levels_among_kernels_with_them_is_marked_not_spelled_out():
    """The attention ladder's report (H200): PyTorch's elementwise kernels had no per-level counters
    among kernels that did; "memory (DRAM only)" widened the table to 82 columns at 80."""
    from gpuprof.analysis import roofline
    from gpuprof.parsers.ncu_levels import RooflineLevels
    from gpuprof.parsers.ncu_metrics import NcuKernelRow

    levels = RooflineLevels(traffic={"L1 pipe": 3.2e13, "L2": 1e12, "DRAM": 1e11},
                            bandwidth={"L1 pipe": 3.3e13, "L2": 1e13, "DRAM": 4.8e12},
                            work={"fp32": 9.3e11}, peak_work={"fp32": 6.6e13})
    row = NcuKernelRow(id=0, kernel_name="attention_bf16_naive", demangled_name="attention_bf16_naive",
                       duration_ns=1e6, roofline_levels=levels)
    judged = roofline.Point("attention_bf16_naive", 9.3, 9.3e11, "fp32", roofline.level_point("n", [row]))
    bare = roofline.Point("vectorized_elementwise_kernel<4>#2", 0.385, 1.03e12)
    roof = Roof(66.9e12, 4.8e12, "datasheet H200 SXM")
    lines = render(ncu_view.roofline_table([judged, bare], roof, 80), 80)
    assert_rows_whole(lines, 80, [judged.label, bare.label])
    row_of_bare = next(line for line in lines if line.startswith(bare.label))
    assert "DRAM†" in row_of_bare
    assert ncu_view.DRAM_ONLY_NOTE.split(":")[0] in " ".join(lines) and "judged against DRAM" in " ".join(lines)
