"""`gpuprof show`'s core: a results file -> the tables `gpuprof run` would have printed, their
figures derived again without a GPU (analysis.derive, stored on the rows; ceilings from the
file's own fingerprint, never from this machine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuprof import results
from gpuprof.analysis import ceilings
from gpuprof.analysis.ceilings import Ceilings
from gpuprof.analysis.derive import derive
from gpuprof.analysis.tables import Report, Table, table_rows
from gpuprof.families.described import Described
from gpuprof.results import Row


def show(path: Path) -> Report:
    """Load the file (InputError if it is not a results file) and group its rows into tables as
    `suite` does; each row's figures are derived again with the ceilings of the file's GPU (a file
    written before speedups were kept gets them here) and stored on it. Each family is the one the
    file's "families" block describes, else this machine's (an earlier file), else a stand-in
    (families.described)."""
    loaded = results.load(path)
    described = Described(loaded.families)
    precisions_from_catalogue(loaded.rows, described)
    limits = ceilings_of(loaded.environment)
    tables = []
    for (family_name, _, mode), rows in table_rows(loaded.rows, str(loaded.timing_policy.get("mode", "cold"))).items():
        family, rate_kind, formula = described.family(family_name, rows)
        names = {r.variant for r in rows}
        baseline = family.baseline if family.baseline in names else None
        vendor = family.vendor_reference if family.vendor_reference in names else None
        derive(rows, rate_kind, baseline, vendor, limits)
        tables.append(Table(family, rows, baseline, vendor, mode, formula))
    return Report(loaded, tables, limits)


def precisions_from_catalogue(rows: list[Row], described: Described | None = None) -> None:
    """Rows of a file that does not say their precision (an earlier gpuprof's) take the file's
    families block's, else the catalogue's for their variant; a variant neither knows keeps it
    unknown (no ceiling, no compute floor), never fp32's, which made a TF32 GEMM "600 %" of its
    ceiling."""
    described = described or Described({})
    known: dict[tuple[str, str], str] = {}
    for row in rows:
        if row.precision != results.UNKNOWN_PRECISION:
            continue
        key = (row.family, row.variant)
        if key not in known:
            known[key] = described.precision(row.family, row.variant)
        row.precision = known[key]


def ceilings_of(environment: dict[str, Any]) -> Ceilings | None:
    """The ceilings of the GPU the file was measured on, from its fingerprint (GPU name, SM count,
    compute capability). Where analysis.ceilings can give none for it, no % ceiling is shown:
    this machine's GPU (if any) says nothing about the file's."""
    try:
        return ceilings.from_environment(environment)
    except (KeyError, TypeError, ValueError):
        return None
