"""`gpuprof devicequery` as tables in deviceQuery's units (MiB, GHz, KiB); the JSON keeps the
plain numbers with their unit in the key (bytes, MHz, GB/s)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

_BINARY = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def size_text(n: float) -> str:
    """Bytes the way deviceQuery writes capacities: the largest binary unit that divides evenly,
    else one decimal of the largest unit reached; small counts stay in bytes."""
    for unit, scale in _BINARY:
        if n >= scale:
            value = n / scale
            return f"{value:,.0f} {unit}" if float(value).is_integer() else f"{value:,.1f} {unit}"
    return f"{int(n):,} bytes"


def clock_text(mhz: float) -> str:
    return f"{mhz / 1e3:.2f} GHz" if mhz >= 1000 else f"{mhz:,.0f} MHz"


def value_text(key: str, value: Any) -> str:
    """One field's value in display units, chosen by the unit its key ends with."""
    if value is None:
        return "not reported"
    if isinstance(value, list):
        return (" x " if key.endswith("_dims") else ", ").join(value_text(key, v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, (int, float)):
        return str(value)
    if key.endswith("_bytes"):
        return size_text(value)
    if key.endswith("_mhz"):
        return clock_text(value)
    if key.endswith("_bits"):
        return f"{value:,}-bit"
    if key.endswith("_gb_s"):
        return f"{value:,.0f} GB/s"
    if key.endswith("_tflop_s"):
        return f"{value:,.1f} TFLOP/s"
    if key.endswith("_w"):
        return f"{value:,.0f} W"
    if key.endswith("_c"):
        return f"{value:.0f} °C"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.3f}".rstrip("0").rstrip(".")


_UNIT_SUFFIXES = ("_bytes", "_mhz", "_bits", "_gb_s", "_tflop_s", "_w", "_c")


def label_text(key: str) -> str:
    for suffix in _UNIT_SUFFIXES:
        if key.endswith(suffix):
            key = key[: -len(suffix)]
            break
    return key.replace("_", " ")


def devicequery_tables(data: dict[str, dict[str, Any]]) -> list[Table]:
    tables = []
    for section, values in data.items():
        table = Table(title=section, title_justify="left", show_header=False)
        table.add_column("field", style="bold", no_wrap=True)
        table.add_column("value")
        for key, value in values.items():
            table.add_row(label_text(key), value_text(key, value))
        tables.append(table)
    return tables
