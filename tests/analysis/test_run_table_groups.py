"""Rows into run tables (analysis.tables.table_rows, the one grouping of run, suite and show): one
table per family, size and timing mode, in the order the rows ran."""

from __future__ import annotations

from gpuprof.analysis.tables import Report, Table, table_rows
from gpuprof.results import FAULT, OK, SKIPPED, WRONG, CheckResult, Results, Row, Timing
from gpuprof.variants import catalog


def row(family: str, variant: str, n: int, mode: str | None = "cold", status: str = OK) -> Row:
    timing = Timing(mode=mode, samples_s=[1e-3], stop_reason="converged", summary=None) if mode else None
    return Row(family=family, variant=variant, size={"n": n}, vendor=False, check=CheckResult(status=status),
               timing=timing)


def keys_and_variants(groups):
    return [(key, [r.variant for r in rows]) for key, rows in groups.items()]


def test_rows_split_by_family_size_and_mode_in_the_order_they_came():
    rows = [row("vecadd", "one_thread", 65536), row("vecadd", "grid", 2**28), row("reduce", "tree", 2**20),
            row("vecadd", "vectorized", 2**28), row("vecadd", "grid", 2**28, mode="hot")]
    assert keys_and_variants(table_rows(rows)) == [
        (("vecadd", "65536", "cold"), ["one_thread"]),
        (("vecadd", "268435456", "cold"), ["grid", "vectorized"]),
        (("reduce", "1048576", "cold"), ["tree"]),
        (("vecadd", "268435456", "hot"), ["grid"]),
    ]


def test_an_untimed_row_is_of_the_results_timing_mode():
    rows = [row("vecadd", "grid", 1024, mode="hot"), row("vecadd", "vectorized", 1024, mode=None, status=WRONG)]
    assert keys_and_variants(table_rows(rows, default_mode="hot")) == [
        (("vecadd", "1024", "hot"), ["grid", "vectorized"])]
    assert len(table_rows(rows, default_mode="cold")) == 2


def test_a_run_keeps_its_capped_rows_in_its_one_table():
    """`gpuprof run vecadd`: one_thread ran at its cap 2^16, the others at 2^28; one table, as it always printed."""
    rows = [row("vecadd", "one_thread", 65536), row("vecadd", "grid", 2**28),
            row("vecadd", "triton", 2**28, mode=None, status=SKIPPED)]
    assert keys_and_variants(table_rows(rows, "cold", asked={"n": 2**28})) == [
        (("vecadd", "268435456", "cold"), ["one_thread", "grid", "triton"])]


def test_a_report_lists_the_failed_rows_and_a_table_its_rate_kind():
    rows = [row("vecadd", "grid", 1024), row("vecadd", "bad", 1024, status=FAULT),
            row("vecadd", "off", 1024, mode=None, status=SKIPPED)]
    report = Report(Results(environment={}, rows=rows), [], None)
    assert [r.variant for r in report.failed] == ["bad"]
    table = Table(catalog.load_family("vecadd"), rows, "grid", None, "cold")
    assert table.rate_kind == "bytes"  # no row judged: the byte rate's header, as an empty table had
