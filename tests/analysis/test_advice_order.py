"""analysis.advice_order: ncu's rule advice led by what the measured limiter makes relevant, on the
reports recorded on the H100 (the vector add is DRAM-bound, matmul_warptile compute-bound)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from gpuprof.analysis import advice_order
from gpuprof.analysis.advice_order import kind, order_advice, ordered_by
from gpuprof.parsers import ncu_csv
from gpuprof.parsers.ncu_metrics import NcuAdvice
from gpuprof.render import ncu_view
from gpuprof.variants.catalog import LIMITERS
from tests.ncu_full_reports import kernel_rows, requires_ncu_report

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VECADD_REPORT = FIXTURES / "tools" / "ncu-2025.3.1__launch_vecadd_grid.ncu-rep"


def advice(rule: str, section: str, speedup: float | None, message: str = "Some advice.") -> NcuAdvice:
    return NcuAdvice(0, section, rule, "OPT", message, speedup)


def actionable(items) -> list[NcuAdvice]:
    return [a for a in items if a.kind in ("OPT", "WRN")]


@requires_ncu_report
def test_the_memory_bound_vector_add_leads_with_memory_advice():
    from gpuprof.parsers.ncu_rep import load_report

    rows = load_report(VECADD_REPORT)
    limiter = ncu_view.measured_limiter("grid", rows)
    assert limiter == "dram"
    ordered = order_advice(actionable(rows[0].advice), limiter)
    assert kind(ordered[0]) == "memory" and ordered[0].message.startswith("Memory is more heavily utilized")
    # ncu's largest estimate, the compute pipes' 94.3 %, is true of a memory-bound kernel and no help: last
    assert ordered[-1].rule == "HighPipeUtilization" and round(ordered[-1].estimated_speedup_pct or 0, 1) == 94.3
    assert max(actionable(rows[0].advice), key=lambda a: a.estimated_speedup_pct or 0).rule == "HighPipeUtilization"


@requires_ncu_report
def test_the_compute_bound_warptile_leads_with_compute_advice():
    row = kernel_rows()["matmul_warptile"]
    limiter = ncu_view.measured_limiter("warptile", [row])
    assert limiter == "compute"
    ordered = order_advice(actionable(row.advice), limiter)
    assert [kind(a) for a in ordered[:2]] == ["compute", "compute"]
    assert {a.rule for a in ordered[:2]} == {"SOLBottleneck", "HighPipeUtilization"}
    # then the largest estimate among the rest: occupancy (87.5 %) before the launch's waves (25 %)
    assert [a.rule for a in ordered[2:4]] == ["TheoreticalOccupancy", "LaunchConfiguration"]


@requires_ncu_report
def test_the_advice_list_says_what_ordered_it():
    row = kernel_rows()["matmul_naive"]
    console = Console(width=100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(ncu_view.advice_list([("naive", row.advice, "l1")]))
    lines = console.export_text().splitlines()
    assert lines[1].strip() == "naive (for an L1-bound kernel: memory advice first)"
    assert lines[2].lstrip().startswith("- MemoryCacheAccessPattern, est. speedup 84.0 %:")


def test_a_one_thread_kernel_far_from_every_roof_leads_with_its_launch():
    path = FIXTURES / "cupy-h100" / "vecadd_cupy_details.csv"  # ncu's CSV, no ncu_report needed
    single = next(r for r in ncu_csv.parse_csv(path.read_text(), path) if r.kernel_name == "vecadd_single")
    limiter = ncu_view.measured_limiter("single", [single])
    ordered = order_advice(actionable(single.advice), limiter)
    assert limiter == "latency"
    assert [a.estimated_speedup_pct for a in ordered[:-1]] == [99.24, 96.88, 96.88, 50.0]  # launch and occupancy
    assert ordered[0].rule == "LaunchConfiguration"
    # "the grid is too small ... Look at Launch Statistics": SpeedOfLight's pointer makes it launch advice
    assert ordered[-1].rule == "SOLBottleneck" and kind(ordered[-1]) == "launch"


def test_rules_are_read_by_name_then_by_section():
    assert kind(advice("UncoalescedGlobalAccess", "SourceCounters", 35.0)) == "memory"
    assert kind(advice("CPIStall", "WarpStateStats", 10.0)) == "latency"
    assert kind(advice("LaunchConfiguration", "LaunchStats", 25.0)) == "launch"
    assert kind(advice("SomeNewRule", "MemoryWorkloadAnalysis_Tables", 5.0)) == "memory"  # a newer ncu's rule
    assert kind(advice("SomeNewRule", "SomeNewSection", 5.0)) == "other"
    compute = "Compute is more heavily utilized than Memory: Look at the Compute Workload Analysis section."
    assert kind(advice("SOLBottleneck", "SpeedOfLight", None, compute)) == "compute"
    assert kind(advice("SOLBottleneck", "SpeedOfLight", None, "This workload is utilizing 80 %.")) == "other"


def test_without_a_limiter_the_largest_estimate_leads_and_negligible_ones_go_last():
    pipes, occupancy = advice("HighPipeUtilization", "ComputeWorkloadAnalysis", 94.3), \
        advice("AchievedOccupancy", "Occupancy", 23.7)
    compression = advice("MemoryL2Compression", "MemoryWorkloadAnalysis_Chart", 0.03)
    coalescing = advice("UncoalescedGlobalAccess", "SourceCounters", 35.0)
    assert order_advice([occupancy, compression, pipes], None) == [pipes, occupancy, compression]
    # relevance first, but a rule ncu expects under 1 % from comes after every other
    assert order_advice([compression, pipes, occupancy, coalescing], "dram") == \
        [coalescing, occupancy, pipes, compression]
    waves = advice("LaunchConfiguration", "LaunchStats", 25.0)
    assert order_advice([pipes, waves, coalescing, occupancy], "latency") == [waves, occupancy, coalescing, pipes]


def test_the_heading_words_for_each_limiter():
    assert ordered_by("dram") == "for a DRAM-bound kernel: memory advice first"
    assert ordered_by("compute") == "for a compute-bound kernel: compute advice first"
    assert ordered_by("latency") == "for a latency-bound kernel: occupancy, stall and launch advice first"
    assert ordered_by(None) == "no measured limiter: largest estimated speedup first"
    assert set(advice_order.RELEVANCE) == set(LIMITERS)


def test_a_note_on_a_metric_ncu_lacks_is_not_advice_on_the_kernel():
    """Recorded on the H200 (ncu 2025.3, the attention ladder): every kernel's CPIStall rule added a
    warning about ncu's own missing PC-sampling metric, which the terminal listed as advice."""
    note = NcuAdvice(0, "WarpStateStats", "CPIStall", "WRN",
                     "The optional metric smsp__pcsamp_sample_count could not be found. Collecting it as an "
                     "additional metric could enable the rule to provide more guidance.", None)
    stall = advice("CPIStall", "WarpStateStats", 32.4, "On average, each warp of this workload spends 1.8 cycles "
                   "being stalled waiting on a fixed latency execution dependency.")
    assert order_advice([note, stall], "compute") == [stall]
    assert order_advice([note], None) == []
