"""Whether two results files can be compared row by row, pure: one id per row, the same GPU model
and the same measurement under each id (InputError otherwise, unless allowed), and warnings on what
may shift times a little (another card, driver, toolkit, clock policy)."""

from __future__ import annotations

from gpuprof.errors import InputError
from gpuprof.results import Results, Row

# Environment keys that may shift times a little without making them incomparable.
_DRIFT_KEYS = (("driver_version", "driver"), ("toolkit_version", "CUDA toolkit"), ("clock_policy", "clock policy"))


def rows_by_id(results: Results, label: str) -> dict[str, Row]:
    rows: dict[str, Row] = {}
    for row in results.rows:
        if row.id in rows:
            raise InputError(f"{label}: row {row.id} appears twice; each (family, variant, size) must be unique")
        rows[row.id] = row
    return rows


def environment_warnings(
    base: Results, new: Results, allow_different_gpu: bool, base_label: str = "BASE", new_label: str = "NEW"
) -> list[str]:
    """Warn on what may shift times a little; GPU models are checked per row (gpu_model_check)."""
    b, n = base.environment, new.environment
    warnings = []
    if b.get("gpu_uuid") and n.get("gpu_uuid") and b["gpu_uuid"] != n["gpu_uuid"] \
            and b.get("gpu_name") == n.get("gpu_name"):
        warnings.append("same GPU model but a different card (gpu_uuid differs); cards of one model differ by "
                        "a few %: the control rows' shift takes that out")
    for key, what in _DRIFT_KEYS:
        if b.get(key) != n.get(key):
            warnings.append(f"different {what}: {b.get(key)!r} in {base_label}, {n.get(key)!r} in {new_label}")
    limits = b.get("power_limit_w"), n.get("power_limit_w")  # files before it was recorded have none
    if None not in limits and limits[0] != limits[1]:
        warnings.append(f"different power limit: {limits[0]:g} W in {base_label}, {limits[1]:g} W in {new_label}; "
                        "tensor-core rows run into the cap at different points")
    return warnings


def gpu_model(row: Row, results: Results) -> str | None:
    """The GPU model that timed this row: its own record in --gpus runs, else the file's."""
    if row.gpu and row.gpu.get("name"):
        return str(row.gpu["name"])
    return results.environment.get("gpu_name")


def gpu_model_check(pairs: list[tuple[Row, Row]], base: Results, new: Results, allow: bool) -> list[str]:
    """Refuse pairs timed on different GPU models (times do not transfer); pairs are matched by id."""
    differ = [(b.id, gpu_model(b, base), gpu_model(n, new)) for b, n in pairs
              if gpu_model(b, base) != gpu_model(n, new)]
    if not differ and base.environment.get("gpu_name") != new.environment.get("gpu_name") and not pairs:
        differ = [("(whole file)", base.environment.get("gpu_name"), new.environment.get("gpu_name"))]
    if not differ:
        return []
    rid, was, now = differ[0]
    where = f"{rid} ran on {was!r} in BASE and on {now!r} in NEW" + (f" (and {len(differ) - 1} more rows)"
                                                                       if len(differ) > 1 else "")
    if not allow:
        raise InputError(f"{where}; times from different GPU models are not comparable "
                         "(pass --allow-different-gpu to compare anyway)")
    return [f"{where}; compared anyway (--allow-different-gpu)"]


def mismatch_check(pairs: list[tuple[Row, Row]], allow: bool) -> list[str]:
    """One row id measured two different ways (timing mode, size keys) gives meaningless ratios."""
    found = []
    for b, n in pairs:
        if b.timing and n.timing and b.timing.mode != n.timing.mode:
            found.append(f"{n.id}: timing mode {b.timing.mode!r} in BASE but {n.timing.mode!r} in NEW")
        if b.size != n.size:
            found.append(f"{n.id}: size {b.size} in BASE but {n.size} in NEW")
        b_prec, n_prec = getattr(b, "precision", None), getattr(n, "precision", None)
        if b_prec != n_prec:
            found.append(f"{n.id}: precision {b_prec!r} in BASE but {n_prec!r} in NEW")
    if found and not allow:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise InputError(f"{found[0]}{more}: the times measure different things "
                         "(pass --allow-mismatch to compare anyway)")
    return [f"{f}; compared anyway (--allow-mismatch)" for f in found]
