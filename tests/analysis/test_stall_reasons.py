"""analysis.stall_reasons: every reason ncu names has words, and the hottest lines and reasons are ranked."""

from __future__ import annotations

import math

import pytest

from gpuprof.analysis import stall_reasons
from gpuprof.parsers.ncu_source import KernelSource, LineStats, load_sources

# As ncu 2025.3.1 names them on the H100: the sampler's and the warp-state ratios' suffixes.
NCU_REASONS = ("long_scoreboard", "short_scoreboard", "mio_throttle", "lg_throttle", "barrier", "math_pipe_throttle",
               "wait", "not_selected", "selected", "no_instruction", "branch_resolving", "dispatch_stall", "drain",
               "membar", "sleeping", "tex_throttle", "imc_miss", "misc", "gmma", "warpgroup_arrive")


def line(number: int, samples: int, **stalls: int) -> LineStats:
    return LineStats("k.cu", number, f"line {number}", samples, stalls, instructions=1)


def test_every_reason_has_a_short_label_a_cause_and_a_remedy():
    for name in NCU_REASONS:
        reason = stall_reasons.describe(name)
        assert reason is stall_reasons.REASONS[name]
        assert 0 < len(reason.label) <= 12, name  # a table cell
        assert 0 < len(reason.cause) <= stall_reasons.CAUSE_WIDTH, name  # whole at 100 columns
        assert reason.remedy, name
    assert not stall_reasons.describe("selected").actionable and stall_reasons.describe("barrier").actionable


def test_every_reason_in_the_recorded_reports_is_described(where_reports):
    for path in where_reports.values():
        for source in load_sources(path):
            for name in (*source.stalls, *source.warp_states):
                assert name in stall_reasons.REASONS, name


def test_an_unknown_reason_reads_as_ncu_spells_it():
    reason = stall_reasons.describe("new_fancy_wait")
    assert reason.label == "new fancy wait" and "no description" in reason.cause


def test_hottest_lines_most_samples_first_without_the_unsampled():
    source = KernelSource(0, "k", samples=10, lines=(line(3, 2), line(1, 0), line(2, 8), line(4, 2)))
    assert [x.line for x in stall_reasons.hottest_lines(source, 10)] == [2, 3, 4]
    assert [x.line for x in stall_reasons.hottest_lines(source, 1)] == [2]
    assert stall_reasons.hottest_lines(source, 0) == []


def test_top_reasons_are_shares_of_the_total():
    assert stall_reasons.top_reasons({"wait": 1, "barrier": 3, "misc": 0}, 5) == [("barrier", 75.0), ("wait", 25.0)]
    assert stall_reasons.top_reasons({}, 2) == []


def test_kernel_reasons_prefer_the_warp_state_ratios_and_fall_back_to_samples():
    states = KernelSource(0, "k", warp_states={"selected": 1.0, "long_scoreboard": 3.0}, stalls={"wait": 5})
    assert stall_reasons.kernel_reasons(states) == [("long_scoreboard", 3.0, 75.0), ("selected", 1.0, 25.0)]
    sampled = stall_reasons.kernel_reasons(KernelSource(0, "k", stalls={"wait": 1, "barrier": 3}))
    assert [(r, s) for r, _, s in sampled] == [("barrier", 75.0), ("wait", 25.0)]
    assert all(math.isnan(c) for _, c, _ in sampled)


@pytest.mark.parametrize("place, found", [("warptile.cu:243", True), ("kernels/matmul/warptile.cu:243", True),
                                          ("/checkout1/kernels/matmul/warptile.cu:243", True),
                                          ("warptile.cu:9999", False), ("other.cu:243", False), ("243", False),
                                          ("warptile.cu:x", False)])
def test_lines_at_takes_the_file_as_shown_its_base_name_or_the_recorded_name(place, found):
    recorded = "/checkout1/kernels/matmul/warptile.cu"
    source = KernelSource(0, "k", files={recorded: "kernels/matmul/warptile.cu"},
                          lines=(LineStats("kernels/matmul/warptile.cu", 243, "x", 1, {"wait": 1}, 1),))
    assert bool(stall_reasons.lines_at(source, place)) is found


def test_top_stall_weighs_launches_by_duration_and_leaves_out_issuing():
    from gpuprof.parsers.ncu_metrics import NcuKernelRow

    def launch(ns: float, **ratios: float) -> NcuKernelRow:
        metrics: dict[str, float | str] = {f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio": v
                                           for r, v in ratios.items()}
        return NcuKernelRow(id=0, kernel_name="k", demangled_name="k", duration_ns=ns, metrics=metrics)

    short, long = launch(1.0, barrier=10.0, selected=50.0), launch(3.0, long_scoreboard=5.0)
    assert stall_reasons.warp_state_cycles([short, long]) == {"barrier": 10.0, "long_scoreboard": 15.0}
    assert stall_reasons.top_stall([short, long]) == ("long_scoreboard", 60.0)
    assert stall_reasons.top_stall([launch(1.0)]) == (None, None)
